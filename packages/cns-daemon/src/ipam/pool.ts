/**
 * A pool as IPAM sees it: one family of one network, its allocatable range and exclusions as BigInt
 * intervals, and what pods on it route through. Built from config that config.ts already checked.
 */
import type { PodRoute } from '@ferry/shared-types/api/common';
import type { NetworkConfig, PoolConfig } from '@ferry/shared-types/config/ferryd';
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

export interface PoolSpec {
  network: string;
  family: Family;
  subnet: Cidr;
  subnetText: string;
  start: bigint;
  end: bigint;
  /** Sorted, merged, clipped to [start, end]. */
  exclusions: [bigint, bigint][];
  /** Allocatable addresses: the range minus exclusions. */
  size: bigint;
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
  let size = end - start + 1n;
  for (const [lo, hi] of exclusions) size -= hi - lo + 1n;
  const gateway = infraNIC ? GATEWAY[family] : pool.gateway;
  const routes: PodRoute[] = [];
  // config.ts has refused a secondary network's default route without a gateway.
  if ((pool.defaultRoute ?? infraNIC) && gateway)
    routes.push({ dst: family === 4 ? '0.0.0.0/0' : '::/0', gw: gateway });
  for (const r of pool.routes) {
    const gw = r.gw ?? gateway;
    routes.push({ dst: r.dst, ...(gw ? { gw } : {}) });
  }
  return {
    network,
    family,
    subnet,
    subnetText: formatCidr(subnet),
    start,
    end,
    exclusions,
    size: size > 0n ? size : 0n,
    hexWidth: family === 4 ? 8 : 32,
    podPrefix: infraNIC ? subnet.bits : subnet.prefix,
    ...(gateway ? { gateway } : {}),
    routes,
  };
}

function mergeIntervals(list: [bigint, bigint][]): [bigint, bigint][] {
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

/** The next allocatable address after `a`, wrapping from `end` to `start` and stepping over exclusions. */
export function nextCandidate(spec: PoolSpec, a: bigint): bigint {
  let n = a + 1n;
  for (;;) {
    if (n > spec.end || n < spec.start) n = spec.start;
    const ex = spec.exclusions.find(([lo, hi]) => n >= lo && n <= hi);
    if (!ex) return n;
    n = ex[1] + 1n;
  }
}
