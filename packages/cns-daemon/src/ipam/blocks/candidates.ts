/**
 * Which free blocks of a range a node tries to claim, from what it sees of the cluster (the IPBlock
 * informer's cache and the other Nodes' spec.podCIDRs, which are theirs during a migration). The walk
 * starts at a block hashed from the node's name, so nodes claiming at once mostly ask for different
 * blocks; a 409 only sends the loser to the next. It jumps over whatever is taken, so it costs what the
 * number of taken spans costs, never the number of blocks in the range (an IPv6 /64 has 2^58).
 */
import { createHash } from 'node:crypto';
import { type Cidr, lastOf } from '../cidr';
import { blockSizeIn, mergeIntervals, type PoolSpec } from '../pool';

export interface CandidateSearch {
  spec: PoolSpec;
  /** Every CIDR no block may overlap: the cluster's blocks (anyone's), other Nodes' pod CIDRs. */
  taken: readonly Cidr[];
  /** Where the walk starts: the node's name (and the pool's, so two pools start apart). */
  seed: string;
  count: number;
}

/** Up to `count` free, aligned, usable blocks of the range, in walk order. */
export function findFreeBlocks({ spec, taken, seed, count }: CandidateSearch): Cidr[] {
  const settings = spec.blocks;
  if (!settings || count <= 0) return [];
  const { subnet } = spec;
  const size = settings.blockAddresses;
  const total = 1n << BigInt(settings.prefix - subnet.prefix);
  const spans = mergeIntervals(taken.filter((c) => c.family === subnet.family).map((c) => [c.base, lastOf(c)]));
  const startIndex = hashOf(seed) % total;
  const out: Cidr[] = [];
  let index = startIndex;
  let walked = 0n;
  while (walked < total && out.length < count) {
    const base = subnet.base + index * size;
    const block: Cidr = { family: subnet.family, base, prefix: settings.prefix, bits: subnet.bits };
    const hit = spanAt(spans, base, lastOf(block));
    let step = 1n;
    if (hit) {
      // Past the span, to the next aligned block (or to the range's end, to wrap).
      const after = (hit[1] + 1n - subnet.base + size - 1n) / size;
      step = after > index ? after - index : total - index;
    } else if (blockSizeIn(spec, block) > 0n) {
      out.push(block);
    }
    walked += step;
    index = (index + step) % total;
  }
  return out;
}

function hashOf(seed: string): bigint {
  return createHash('sha256').update(seed).digest().readBigUInt64BE(0);
}

/** The span overlapping [lo, hi], if any (binary search over sorted, merged spans). */
function spanAt(spans: readonly [bigint, bigint][], lo: bigint, hi: bigint): [bigint, bigint] | undefined {
  let a = 0;
  let b = spans.length;
  while (a < b) {
    const mid = (a + b) >> 1;
    const s = spans[mid];
    if (s && s[1] < lo) a = mid + 1;
    else b = mid;
  }
  const s = spans[a];
  return s && s[0] <= hi ? s : undefined;
}
