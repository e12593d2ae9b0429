/**
 * The InfraNIC's host-side veth name, a contract between ferryd (which records it at allocate) and the
 * shim (which derives it at DEL and deletes the veth before it asks ferryd anything, so the usual DEL is
 * one request). No I/O and no import: the caller brings SHA-256, because node:crypto costs the Bun-built
 * shim ~2 ms to load where Bun's own hasher costs nothing.
 */

/** SHA-256 of UTF-8 `text`, as 64 lower-case hex digits. */
export type Sha256Hex = (text: string) => string;

/** What every Ferry host veth's name starts with (and no other link of Ferry's). */
export const HOST_VETH_PREFIX = 'fry';

/**
 * `fry` + 12 hex digits of sha256(network/containerId/ifName): 15 bytes, the most IFNAMSIZ allows.
 * Deterministic, so a DEL finds the veth even when ADD died before commit, and a leftover with this name
 * can only belong to the same attachment. The network is part of it: a DEL naming another network (the
 * runtime cleaning up an ADD that ferryd refused because the container's ifName is taken) must never find
 * this attachment's veth.
 */
export function hostVethNameOf(sha256Hex: Sha256Hex, network: string, containerId: string, ifName: string): string {
  return `${HOST_VETH_PREFIX}${sha256Hex(`${network}/${containerId}/${ifName}`).slice(0, 12)}`;
}

/**
 * The MAC of every host veth (the pods' gateway neighbour entry points at it): ferryd puts it in the plan,
 * and the shim gives it to a pair it makes before the plan arrives.
 */
export const HOST_VETH_MAC = 'ee:ee:ee:ee:ee:ee';
