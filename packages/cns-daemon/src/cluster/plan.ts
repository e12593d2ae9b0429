/**
 * What the node must hold for its peers, computed without touching the kernel: one route per remote
 * pod CIDR (host-gw: via the peer's underlay address; vxlan: via the peer's VTEP address on the VXLAN
 * device, onlink), and for vxlan a permanent neighbour entry (VTEP address → VTEP MAC) and an FDB entry
 * (VTEP MAC → underlay address) per peer. Peers that cannot be routed are listed with the reason.
 */
import { createHash } from 'node:crypto';
import type { ClusterRouting } from '@ferry/shared-types/config/ferryd';
import {
  type Cidr,
  canonicalAddress,
  type Family,
  familyOf,
  formatCidr,
  fromBigInt,
  overlaps,
  parseCidr,
} from '../ipam/cidr';
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

export interface PlanOptions {
  routing: ClusterRouting;
  /** This node's pod CIDRs and blocks: a peer claiming one of them is refused. */
  ownPodCIDRs: readonly string[];
  /** vxlan: the device, and the family of the underlay (the local end's address). */
  vxlan?: { device: string; underlayFamily: Family };
}

/** The keys a view changed in the plan: only these need comparing with the kernel. */
export interface Touched {
  routes: Set<string>;
  neighbours: Set<string>;
  fdb: Set<string>;
}

interface PeerPlan {
  /** The peer's addresses and CIDRs as one string: an unchanged peer is not planned again. */
  signature: string;
  routes: RouteEntry[];
  neighbours: [string, string][];
  fdb: [string, string][];
  unroutable: Unroutable[];
  claims: string[];
}

/**
 * The plan for the current view, kept up to date one peer at a time: a new view re-plans only the
 * peers whose addresses or pod CIDRs changed (and those that lost a contested CIDR to another), so one
 * node's change costs the same with 5 peers or 5,000.
 */
export class Planner {
  readonly entries: Entries = emptyEntries();
  /** Which peer each entry is for (route dst, neighbour address, FDB MAC → peer name). */
  readonly ownerOf = new Map<string, string>();
  readonly #opts: PlanOptions;
  readonly #own: Cidr[];
  readonly #peers = new Map<string, PeerPlan>();
  /** Pod CIDR → the peer whose route it got. */
  readonly #claims = new Map<string, string>();
  /** Peers refused a CIDR because another peer claims it: planned again whenever anything changes. */
  readonly #contested = new Set<string>();

  constructor(opts: PlanOptions) {
    this.#opts = opts;
    this.#own = opts.ownPodCIDRs.map(parseCidr);
  }

  get unroutable(): Unroutable[] {
    return [...this.#peers.values()].flatMap((p) => p.unroutable);
  }

  update(peers: readonly Peer[]): Touched {
    const touched: Touched = { routes: new Set(), neighbours: new Set(), fdb: new Set() };
    if (this.#opts.routing === 'none') return touched;
    const present = new Set<string>();
    const todo: Peer[] = [];
    for (const p of peers) {
      present.add(p.name);
      const old = this.#peers.get(p.name);
      if (!old || old.signature !== signatureOf(p)) todo.push(p);
    }
    const gone = [...this.#peers.keys()].filter((name) => !present.has(name));
    if (todo.length === 0 && gone.length === 0) return touched;
    const planned = new Set(todo.map((p) => p.name));
    for (const p of peers) if (this.#contested.has(p.name) && !planned.has(p.name)) todo.push(p);
    for (const name of [...gone, ...todo.map((p) => p.name)]) this.#remove(name, touched);
    for (const p of todo) this.#add(p, touched);
    return touched;
  }

  #remove(name: string, touched: Touched): void {
    const old = this.#peers.get(name);
    if (!old) return;
    this.#peers.delete(name);
    this.#contested.delete(name);
    for (const c of old.claims) if (this.#claims.get(c) === name) this.#claims.delete(c);
    const drop = (map: Map<string, unknown>, key: string, set: Set<string>) => {
      if (this.ownerOf.get(key) !== name) return;
      map.delete(key);
      this.ownerOf.delete(key);
      set.add(key);
    };
    for (const r of old.routes) drop(this.entries.routes, r.dst, touched.routes);
    for (const [k] of old.neighbours) drop(this.entries.neighbours, k, touched.neighbours);
    for (const [k] of old.fdb) drop(this.entries.fdb, k, touched.fdb);
  }

  #add(peer: Peer, touched: Touched): void {
    const p: PeerPlan = {
      signature: signatureOf(peer),
      routes: [],
      neighbours: [],
      fdb: [],
      unroutable: [],
      claims: [],
    };
    const cidrs: Cidr[] = [];
    for (const text of [...peer.podCIDRs, ...(peer.blocks ?? [])]) {
      let c: Cidr;
      try {
        c = parseCidr(text);
      } catch (err) {
        p.unroutable.push({ peer: peer.name, cidr: text, reason: (err as Error).message });
        continue;
      }
      const key = formatCidr(c);
      const other = this.#claims.get(key);
      if (other !== undefined && other !== peer.name) {
        p.unroutable.push({ peer: peer.name, cidr: key, reason: `also claimed by node ${other}` });
        this.#contested.add(peer.name);
      } else if (this.#own.some((o) => overlaps(o, c))) {
        p.unroutable.push({ peer: peer.name, cidr: key, reason: "overlaps this node's pod CIDRs" });
      } else {
        this.#claims.set(key, peer.name);
        p.claims.push(key);
        cidrs.push(c);
      }
    }
    if (this.#opts.vxlan) planVxlanPeer(p, peer, cidrs, this.#opts.vxlan);
    else planHostGwPeer(p, peer, cidrs);
    this.#peers.set(peer.name, p);
    for (const r of p.routes) {
      this.entries.routes.set(r.dst, r);
      this.ownerOf.set(r.dst, peer.name);
      touched.routes.add(r.dst);
    }
    for (const [k, v] of p.neighbours) {
      this.entries.neighbours.set(k, v);
      this.ownerOf.set(k, peer.name);
      touched.neighbours.add(k);
    }
    for (const [k, v] of p.fdb) {
      this.entries.fdb.set(k, v);
      this.ownerOf.set(k, peer.name);
      touched.fdb.add(k);
    }
  }
}

function signatureOf(p: Peer): string {
  return `${p.addresses.join(',')}|${p.podCIDRs.join(',')}|${(p.blocks ?? []).join(',')}`;
}

function addressOf(peer: Peer, family: Family): string | undefined {
  const a = peer.addresses.find((x) => familyOf(x) === family);
  // As the kernel prints it: `2001:db8:0::1` in a config would never equal a route's gateway.
  return a === undefined ? undefined : canonicalAddress(a);
}

function planHostGwPeer(p: PeerPlan, peer: Peer, cidrs: Cidr[]): void {
  for (const c of cidrs) {
    const dst = formatCidr(c);
    const via = addressOf(peer, c.family);
    if (via) p.routes.push({ dst, via, onlink: false });
    else p.unroutable.push({ peer: peer.name, cidr: dst, reason: `no IPv${c.family} address to route it via` });
  }
}

function planVxlanPeer(
  p: PeerPlan,
  peer: Peer,
  cidrs: Cidr[],
  vxlan: { device: string; underlayFamily: Family },
): void {
  if (cidrs.length === 0) return;
  const underlay = addressOf(peer, vxlan.underlayFamily);
  if (!underlay) {
    p.unroutable.push({ peer: peer.name, reason: `no IPv${vxlan.underlayFamily} address for the VXLAN underlay` });
    return;
  }
  const mac = vtepMac(peer.name);
  p.fdb.push([mac, underlay]);
  // One VTEP address per family (vtepOf), computed from what the peer holds, as the peer computes its own.
  const accepted = new Set(cidrs.map(formatCidr));
  const vtep = new Map<Family, string>();
  for (const c of cidrs) {
    let via = vtep.get(c.family);
    if (!via) {
      const chosen = vtepOf(
        peer.podCIDRs.filter((x) => accepted.has(x)),
        (peer.blocks ?? []).filter((x) => accepted.has(x)),
        c.family,
      );
      via = chosen ? vtepAddress(chosen) : vtepAddress(c);
      vtep.set(c.family, via);
      p.neighbours.push([via, mac]);
    }
    p.routes.push({ dst: formatCidr(c), via, dev: vxlan.device, onlink: true });
  }
}

/** A node's VTEP address: the network address of its pod CIDR (flannel's choice). */
export function vtepAddress(c: Cidr): string {
  return fromBigInt(c.base, c.family);
}

/**
 * The CIDR whose network address is a node's VTEP address in `family`: the lowest block it holds (a
 * block's first address is never a pod's: ipam/pool.ts withBlocks), else its first pod CIDR. The node
 * and its peers compute it from the same lists, so they agree.
 */
export function vtepOf(podCIDRs: readonly string[], blocks: readonly string[], family: Family): Cidr | undefined {
  const ofFamily = (list: readonly string[]) => list.map(parseCidr).filter((c) => c.family === family);
  const lowest = ofFamily(blocks).sort((a, b) => (a.base < b.base ? -1 : a.base > b.base ? 1 : 0))[0];
  return lowest ?? ofFamily(podCIDRs)[0];
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
