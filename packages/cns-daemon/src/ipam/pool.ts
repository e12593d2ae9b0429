/**
 * A pool as IPAM sees it: one family of one network, the addresses it may hand out as sorted BigInt
 * intervals, and what pods on it route through. Built from config that config.ts already checked. A
 * fixed subnet's intervals are its range minus its exclusions; a range split into blocks (cluster IPAM)
 * hands out only the blocks the node holds, so its intervals follow them (withBlocks).
 */
import type { PodRoute } from '@ferry/shared-types/api/common';
import {
  type BlocksConfig,
  DEFAULT_BLOCK_PREFIX,
  type NetworkConfig,
  type PoolConfig,
} from '@ferry/shared-types/config/ferryd';
import {
  type Cidr,
  contains,
  type Family,
  familyOf,
  formatCidr,
  lastOf,
  parseCidr,
  parseExclusion,
  toBigInt,
} from './cidr';

/**
 * On an InfraNIC network every pod's gateway is a link-local address no interface owns on IPv4
 * (169.254.1.1) and the link-local address of the fixed host-veth MAC on IPv6, so all pods share one
 * gateway and the node needs no per-pod gateway address. The pod reaches it through a permanent
 * neighbour entry for HOST_VETH_MAC. A secondary network's pods sit on the devices' own segment: their
 * gateway is the pool's `gateway`, when it has one.
 */
const GATEWAY: Record<Family, string> = { 4: '169.254.1.1', 6: 'fe80::ecee:eeff:feee:eeee' };

/** How a range is split into blocks and how many of them a node holds (config `blocks`, defaults applied). */
export interface BlockSettings {
  prefix: number;
  /** Addresses in one block (its first is never handed out: see withBlocks). */
  blockAddresses: bigint;
  minFree: number;
  maxFree: number;
  releaseAfterMs: number;
  maxBlocks: number;
  waitMs: number;
}

export interface PoolSpec {
  network: string;
  family: Family;
  /** The subnet, or in cluster IPAM the whole range; offsets are relative to its base. */
  subnet: Cidr;
  subnetText: string;
  start: bigint;
  end: bigint;
  /** Sorted, merged, clipped to [start, end]. */
  exclusions: [bigint, bigint][];
  /** What may be handed out: sorted, disjoint, non-empty intervals inside [start, end] and outside every exclusion. */
  intervals: [bigint, bigint][];
  /** Allocatable addresses: the intervals' sum. */
  size: bigint;
  /** Set when the subnet is a range split into blocks. */
  blocks?: BlockSettings;
  /** Offsets are stored as this many hex digits (8 for IPv4, 32 for IPv6). */
  hexWidth: number;
  /** The prefix length a pod's address carries: the whole address (/32, /128) routed over the InfraNIC, the subnet's on a secondary network's segment. */
  podPrefix: number;
  gateway?: string;
  routes: PodRoute[];
}

export function poolSpecsOf(net: NetworkConfig): PoolSpec[] {
  const out: PoolSpec[] = [];
  if (net.ipv4) out.push(poolSpecOf(net.name, 4, net.ipv4, net.infraNIC));
  if (net.ipv6) out.push(poolSpecOf(net.name, 6, net.ipv6, net.infraNIC));
  return out;
}

function poolSpecOf(network: string, family: Family, pool: PoolConfig, infraNIC: boolean): PoolSpec {
  const subnet = parseCidr(pool.subnet);
  const last = lastOf(subnet);
  // IPv4 skips the network and broadcast addresses; IPv6 skips only the subnet-router anycast address.
  const start = pool.rangeStart ? toBigInt(pool.rangeStart) : subnet.base + 1n;
  const end = pool.rangeEnd ? toBigInt(pool.rangeEnd) : family === 4 ? last - 1n : last;
  const exclusions = mergeIntervals(
    // The segment's router is never a pod's address.
    [...pool.exclude, ...(pool.gateway ? [pool.gateway] : [])]
      // config.ts has already refused an exclusion of the other family or outside the subnet.
      .map(parseExclusion)
      .map((c): [bigint, bigint] => [c.base > start ? c.base : start, lastOf(c) < end ? lastOf(c) : end])
      .filter(([lo, hi]) => lo <= hi),
  );
  const gateway = infraNIC ? GATEWAY[family] : pool.gateway;
  const routes: PodRoute[] = [];
  // config.ts has refused a secondary network's default route without a gateway.
  if ((pool.defaultRoute ?? infraNIC) && gateway)
    routes.push({ dst: family === 4 ? '0.0.0.0/0' : '::/0', gw: gateway });
  for (const r of pool.routes) {
    const gw = r.gw ?? gateway;
    routes.push({ dst: r.dst, ...(gw ? { gw } : {}) });
  }
  const blocks = pool.blocks ? blockSettingsOf(pool.blocks, subnet) : undefined;
  // A range hands out nothing until the node holds blocks of it.
  const intervals = blocks ? [] : subtract([[start, end]], exclusions);
  return {
    network,
    family,
    subnet,
    subnetText: formatCidr(subnet),
    start,
    end,
    exclusions,
    intervals,
    size: sizeOf(intervals),
    ...(blocks ? { blocks } : {}),
    hexWidth: family === 4 ? 8 : 32,
    podPrefix: infraNIC ? subnet.bits : subnet.prefix,
    ...(gateway ? { gateway } : {}),
    routes,
  };
}

function blockSettingsOf(config: BlocksConfig, range: Cidr): BlockSettings {
  const prefix = config.prefixLength ?? DEFAULT_BLOCK_PREFIX[range.family];
  const blockAddresses = 1n << BigInt(range.bits - prefix);
  // config.ts has checked that maxFree leaves room for a block above minFree.
  const perBlock = Number(blockAddresses);
  const minFree = config.minFree ?? Math.floor(perBlock / 4);
  return {
    prefix,
    blockAddresses,
    minFree,
    maxFree: config.maxFree ?? minFree + perBlock,
    releaseAfterMs: config.releaseAfterSec * 1000,
    maxBlocks: config.maxBlocks,
    waitMs: config.waitMs,
  };
}

/**
 * The spec of a range whose node holds `blocks` (all inside the range, of its prefix): each block's
 * addresses but its first, inside [start, end] and outside the exclusions. A block's first address is the
 * node's VXLAN end when the block is the node's first (cluster/plan.ts vtepAddress, flannel's choice, as a
 * /24's network address was), so it is never a pod's, whichever block comes first.
 */
export function withBlocks(spec: PoolSpec, blocks: readonly Cidr[]): PoolSpec {
  const spans = mergeIntervals(
    blocks.map((b): [bigint, bigint] => [
      b.base + 1n > spec.start ? b.base + 1n : spec.start,
      min(lastOf(b), spec.end),
    ]),
  ).filter(([lo, hi]) => lo <= hi);
  const intervals = subtract(spans, spec.exclusions);
  return { ...spec, intervals, size: sizeOf(intervals) };
}

/** The allocatable addresses of one block in `spec`'s range (what it adds to the node's free count). */
export function blockSizeIn(spec: PoolSpec, block: Cidr): bigint {
  return withBlocks(spec, [block]).size;
}

const min = (a: bigint, b: bigint) => (a < b ? a : b);

function sizeOf(intervals: readonly [bigint, bigint][]): bigint {
  let n = 0n;
  for (const [lo, hi] of intervals) n += hi - lo + 1n;
  return n;
}

/** `from` minus `cut`, both sorted and disjoint. */
function subtract(from: readonly [bigint, bigint][], cut: readonly [bigint, bigint][]): [bigint, bigint][] {
  const out: [bigint, bigint][] = [];
  for (const [lo0, hi] of from) {
    let lo = lo0;
    for (const [clo, chi] of cut) {
      if (chi < lo || clo > hi) continue;
      if (clo > lo) out.push([lo, clo - 1n]);
      lo = chi + 1n;
      if (lo > hi) break;
    }
    if (lo <= hi) out.push([lo, hi]);
  }
  return out;
}

/** Sorts and merges intervals that overlap or touch. */
export function mergeIntervals(list: [bigint, bigint][]): [bigint, bigint][] {
  const sorted = [...list].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const out: [bigint, bigint][] = [];
  for (const [lo, hi] of sorted) {
    const prev = out.at(-1);
    // biome-ignore lint/complexity/useMathMinMax: Math.max does not take BigInt.
    if (prev && lo <= prev[1] + 1n) prev[1] = hi > prev[1] ? hi : prev[1];
    else out.push([lo, hi]);
  }
  return out;
}

export function offsetHex(spec: PoolSpec, address: bigint): string {
  return (address - spec.subnet.base).toString(16).padStart(spec.hexWidth, '0');
}

/**
 * The pool of `pools` that `address` (without prefix length) is in: the one address→pool lookup of
 * everything that meets an address it did not hand out (adoption from the node). Undefined for none, and
 * for text that is no address.
 */
export function poolOf<P extends { spec: PoolSpec }>(pools: readonly P[], address: string): P | undefined {
  let n: bigint;
  try {
    n = toBigInt(address);
  } catch {
    return undefined;
  }
  const family = familyOf(address);
  return pools.find((p) => p.spec.family === family && contains(p.spec.subnet, n));
}

export function addressOfHex(spec: PoolSpec, hex: string): bigint {
  return spec.subnet.base + BigInt(`0x${hex}`);
}

/**
 * The next allocatable address after `a`: the next in its interval, else the first of the next interval,
 * wrapping from the last to the first. `spec.intervals` must not be empty.
 */
export function nextCandidate(spec: PoolSpec, a: bigint): bigint {
  const n = a + 1n;
  const { intervals } = spec;
  // Binary search for the first interval ending at or after n: a fixed subnet has one or a few, a range
  // one per block held.
  let lo = 0;
  let hi = intervals.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    const iv = intervals[mid];
    if (iv && iv[1] < n) lo = mid + 1;
    else hi = mid;
  }
  const at = intervals[lo] ?? intervals[0];
  if (!at) throw new Error(`pool ${spec.subnetText} has no allocatable interval`);
  return at === intervals[lo] && n >= at[0] ? n : at[0];
}
