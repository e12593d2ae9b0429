import type { Runtime } from './runtime/runtime';

/**
 * The file name of an attachment's delete-queue or commit-journal entry: a hash of the attachment key,
 * never anything the runtime sent verbatim, so repeated writes for one attachment replace each other.
 */
export function attachmentFileNameOf(
  rt: Pick<Runtime, 'sha256Hex'>,
  network: string,
  containerId: string,
  ifName: string,
): string {
  return `${rt.sha256Hex(`${network}\n${containerId}\n${ifName}`).slice(0, 32)}.json`;
}
