import { createHash } from 'node:crypto';

/**
 * The InfraNIC's host-side veth name: `fry` + 12 hex digits of sha256(containerId/ifName), 15 bytes,
 * the most IFNAMSIZ allows. Deterministic, so a DEL finds the veth even when ADD died before commit,
 * and a leftover with this name can only belong to the same attachment.
 */
export function hostVethNameOf(containerId: string, ifName: string): string {
  return `fry${createHash('sha256').update(`${containerId}/${ifName}`).digest('hex').slice(0, 12)}`;
}
