/**
 * What the node must hold for its peers, computed without touching the kernel: one route per remote
 * pod CIDR (host-gw: via the peer's underlay address; vxlan: via the peer's VTEP address on the VXLAN
 * device, onlink), and for vxlan a permanent neighbour entry (VTEP address → VTEP MAC) and an FDB entry
 * (VTEP MAC → underlay address) per peer. Peers that cannot be routed are listed with the reason.
 */
import { createHash } from 'node:crypto';
import type { ClusterRouting } from '@ferry/shared-types/config/ferryd';
import { type Cidr, type Family, familyOf, formatCidr, fromBigInt, overlaps, parseCidr } from '../ipam/cidr';
import type { Peer } from './peers';

export interface RouteEntry {
  dst: string;
  via: string;
  dev?: string;
  onlink: boolean;
}

/** Everything Ferry owns on the node, keyed the way it is diffed: routes by dst, neighbours by address, FDB by MAC. */
export interface Entries {
  routes: Map<string, RouteEntry>;
  neighbours: Map<string, string>;
  fdb: Map<string, string>;
}

export function emptyEntries(): Entries {
  return { routes: new Map(), neighbours: new Map(), fdb: new Map() };
}

export interface Unroutable {
  peer: string;
  /** The pod CIDR that gets no route, or undefined when the whole peer is left out. */
  cidr?: string;
  reason: string;
}

export interface Plan {
  entries: Entries;
  unroutable: Unroutable[];
  /** Which peer each entry is for (route dst, neighbour address, FDB MAC → peer name). */
  ownerOf: Map<string, string>;
}

export interface PlanInput {
  routing: ClusterRouting;
  /** This node's pod CIDRs: a peer claiming one of them is refused. */
  ownPodCIDRs: readonly string[];
  peers: readonly Peer[];
  /** vxlan: the device, and the family of the underlay (the local end's address). */
  vxlan?: { device: string; underlayFamily: Family };
}

export function plan(input: PlanInput): Plan {
  const entries = emptyEntries();
  const unroutable: Unroutable[] = [];
  const ownerOf = new Map<string, string>();
  if (input.routing === 'none') return { entries, unroutable, ownerOf };
  const own = input.ownPodCIDRs.map(parseCidr);
  const claimed = new Map<string, string>();
  for (const peer of input.peers) {
    const cidrs: Cidr[] = [];
    for (const text of peer.podCIDRs) {
      let c: Cidr;
      try {
        c = parseCidr(text);
      } catch (err) {
        unroutable.push({ peer: peer.name, cidr: text, reason: (err as Error).message });
        continue;
      }
      const key = formatCidr(c);
      const other = claimed.get(key);
      if (other !== undefined) {
        unroutable.push({ peer: peer.name, cidr: key, reason: `also claimed by node ${other}` });
      } else if (own.some((o) => overlaps(o, c))) {
        unroutable.push({ peer: peer.name, cidr: key, reason: "overlaps this node's pod CIDRs" });
      } else {
        claimed.set(key, peer.name);
        cidrs.push(c);
      }
    }
    if (input.vxlan) addVxlanPeer(entries, unroutable, ownerOf, peer, cidrs, input.vxlan);
    else addHostGwPeer(entries, unroutable, ownerOf, peer, cidrs);
  }
  return { entries, unroutable, ownerOf };
}

function addressOf(peer: Peer, family: Family): string | undefined {
  return peer.addresses.find((a) => familyOf(a) === family);
}

function addHostGwPeer(
  entries: Entries,
  unroutable: Unroutable[],
  ownerOf: Map<string, string>,
  peer: Peer,
  cidrs: Cidr[],
): void {
  for (const c of cidrs) {
    const dst = formatCidr(c);
    const via = addressOf(peer, c.family);
    if (!via) {
      unroutable.push({ peer: peer.name, cidr: dst, reason: `no IPv${c.family} address to route it via` });
      continue;
    }
    entries.routes.set(dst, { dst, via, onlink: false });
    ownerOf.set(dst, peer.name);
  }
}

function addVxlanPeer(
  entries: Entries,
  unroutable: Unroutable[],
  ownerOf: Map<string, string>,
  peer: Peer,
  cidrs: Cidr[],
  vxlan: { device: string; underlayFamily: Family },
): void {
  if (cidrs.length === 0) return;
  const underlay = addressOf(peer, vxlan.underlayFamily);
  if (!underlay) {
    unroutable.push({ peer: peer.name, reason: `no IPv${vxlan.underlayFamily} address for the VXLAN underlay` });
    return;
  }
  const mac = vtepMac(peer.name);
  entries.fdb.set(mac, underlay);
  ownerOf.set(mac, peer.name);
  // One VTEP address per family: the network address of the peer's first pod CIDR of that family.
  const vtep = new Map<Family, string>();
  for (const c of cidrs) {
    let via = vtep.get(c.family);
    if (!via) {
      via = vtepAddress(c);
      vtep.set(c.family, via);
      entries.neighbours.set(via, mac);
      ownerOf.set(via, peer.name);
    }
    const dst = formatCidr(c);
    entries.routes.set(dst, { dst, via, dev: vxlan.device, onlink: true });
    ownerOf.set(dst, peer.name);
  }
}

/** A node's VTEP address: the network address of its pod CIDR (flannel's choice). */
export function vtepAddress(c: Cidr): string {
  return fromBigInt(c.base, c.family);
}

/**
 * A node's VTEP MAC, derived from its name: every node computes every other node's MAC itself, so
 * nothing has to be published on the Node object (flannel's annotation needs `patch` on nodes). A
 * locally administered unicast address.
 */
export function vtepMac(nodeName: string): string {
  const h = createHash('sha256').update(nodeName).digest();
  const bytes = [((h[0] ?? 0) & 0xfc) | 0x02, ...h.subarray(1, 6)];
  return bytes.map((b) => b.toString(16).padStart(2, '0')).join(':');
}
