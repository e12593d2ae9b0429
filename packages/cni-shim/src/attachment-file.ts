import { createHash } from 'node:crypto';

/**
 * The file name of an attachment's delete-queue or commit-journal entry: a hash of the attachment key,
 * never anything the runtime sent verbatim, so repeated writes for one attachment replace each other.
 */
export function attachmentFileNameOf(network: string, containerId: string, ifName: string): string {
  return `${createHash('sha256').update(`${network}\n${containerId}\n${ifName}`).digest('hex').slice(0, 32)}.json`;
}
