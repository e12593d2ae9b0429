import { NetworkConfigSchema } from '@ferry/shared-types/config/ferryd';
import { expect, test } from 'vitest';
import { type Cidr, formatCidr, parseCidr, toBigInt } from '../cidr';
import { type PoolSpec, poolSpecsOf } from '../pool';
import { findFreeBlocks } from './candidates';

function rangeOf(pool: Record<string, unknown>, family: 4 | 6 = 4): PoolSpec {
  const spec = poolSpecsOf(NetworkConfigSchema.parse({ name: 'n', [`ipv${family}`]: pool }))[0];
  if (!spec) throw new Error('no spec');
  return spec;
}

const find = (spec: PoolSpec, taken: string[], seed: string, count: number) =>
  findFreeBlocks({ spec, taken: taken.map(parseCidr), seed, count }).map(formatCidr);

test('free aligned blocks, skipping what is taken (blocks, another Node’s pod CIDRs) and what is all excluded', () => {
  const spec = rangeOf({
    subnet: '10.0.0.0/24',
    blocks: {},
    exclude: ['10.0.0.65/32', '10.0.0.66/31', '10.0.0.68/30', '10.0.0.72/29', '10.0.0.80/28', '10.0.0.96/27'],
  });
  // Four /26 blocks: .0 taken, .64 all excluded (its first address is never handed out anyway), .128 and .192 free.
  const all = find(spec, ['10.0.0.0/26'], 'node-a', 10);
  expect(all.sort()).toEqual(['10.0.0.128/26', '10.0.0.192/26']);
  expect(find(spec, ['10.0.0.0/26', '10.0.0.128/25'], 'node-a', 10)).toEqual([]);
  // A taken CIDR of another prefix (a Node's /25) takes every block it overlaps.
  expect(find(spec, ['10.0.0.128/25'], 'node-a', 10)).toEqual(['10.0.0.0/26']);
});

test('nodes start at different blocks; each walks the whole range from its start', () => {
  const spec = rangeOf({ subnet: '10.0.0.0/16', blocks: {} });
  const starts = new Set(['node-1', 'node-2', 'node-3', 'node-4', 'node-5'].map((n) => find(spec, [], n, 1)[0]));
  expect(starts.size).toBe(5);
  const [first] = find(spec, [], 'node-1', 1);
  const walk = find(spec, [first ?? ''], 'node-1', 1024);
  expect(walk).toHaveLength(1023);
  expect(new Set(walk).size).toBe(1023);
});

test('an IPv6 /64 of /122 blocks: the walk jumps over taken spans instead of visiting 2^58 blocks', () => {
  const spec = rangeOf({ subnet: 'fd00:10::/64', blocks: {} }, 6);
  const [first] = find(spec, [], 'node-1', 1);
  const taken: Cidr[] = [parseCidr(first ?? '')];
  const next = findFreeBlocks({ spec, taken, seed: 'node-1', count: 2 }).map(formatCidr);
  expect(next).toHaveLength(2);
  expect(next).not.toContain(first);
  // Seven eighths taken in three spans: the block found is in the last eighth, wherever the walk starts.
  const sevenEighths = ['fd00:10::/65', 'fd00:10:0:0:8000::/66', 'fd00:10:0:0:c000::/67'].map(parseCidr);
  for (const seed of ['node-1', 'node-2', 'node-3']) {
    const [found] = findFreeBlocks({ spec, taken: sevenEighths, seed, count: 1 });
    expect(found && found.base >= toBigInt('fd00:10:0:0:e000::')).toBe(true);
  }
});
