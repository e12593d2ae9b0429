import { createHash } from 'node:crypto';
import { attachmentFileNameOf } from '@ferry/shared-types/attachment-file';
import { hostVethNameOf as nameOf } from '@ferry/shared-types/host-veth';

const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');

/** The InfraNIC's host veth name (shared-types/host-veth.ts: the shim derives the same at DEL). */
export function hostVethNameOf(network: string, containerId: string, ifName: string): string {
  return nameOf(sha256Hex, network, containerId, ifName);
}

/** The name the shim gives the attachment's delete-queue and commit-journal entries (shared-types). */
export function entryFileNameOf(network: string, containerId: string, ifName: string): string {
  return attachmentFileNameOf(sha256Hex, network, containerId, ifName);
}
