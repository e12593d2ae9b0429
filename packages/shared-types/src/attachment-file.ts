import type { Sha256Hex } from './host-veth';

/**
 * The file name of an attachment's delete-queue or commit-journal entry: a hash of the attachment key,
 * never anything the runtime sent verbatim, so repeated writes for one attachment replace each other. The
 * shim names its entries so; ferryd finds the entry of the attachment it is about to allocate by it.
 */
export function attachmentFileNameOf(
  sha256Hex: Sha256Hex,
  network: string,
  containerId: string,
  ifName: string,
): string {
  return `${sha256Hex(`${network}\n${containerId}\n${ifName}`).slice(0, 32)}.json`;
}
