import { NetworkConfigSchema } from '@ferry/shared-types/config/ferryd';
import { expect, test } from 'vitest';
import { fromBigInt, parseCidr, toBigInt } from './cidr';
import { blockSizeIn, nextCandidate, type PoolSpec, poolSpecsOf, withBlocks } from './pool';

function specOf(ipv4: Record<string, unknown>): PoolSpec {
  const [spec] = poolSpecsOf(NetworkConfigSchema.parse({ name: 'n', ipv4 }));
  if (!spec) throw new Error('no spec');
  return spec;
}

const text = (spec: PoolSpec) => spec.intervals.map(([lo, hi]) => `${fromBigInt(lo, 4)}-${fromBigInt(hi, 4)}`);

test('a fixed subnet: its range minus exclusions, as intervals', () => {
  const spec = specOf({ subnet: '10.0.0.0/24', exclude: ['10.0.0.10', '10.0.0.64/30'] });
  expect(text(spec)).toEqual(['10.0.0.1-10.0.0.9', '10.0.0.11-10.0.0.63', '10.0.0.68-10.0.0.254']);
  expect(spec.size).toBe(254n - 5n);
  expect(spec.blocks).toBeUndefined();
});

test('a range hands out nothing before it holds a block; then each block but its first address', () => {
  const range = specOf({ subnet: '10.0.0.0/16', exclude: ['10.0.3.5'], blocks: {} });
  expect(range.size).toBe(0n);
  expect(range.blocks).toMatchObject({ prefix: 26, blockAddresses: 64n, minFree: 16, maxFree: 80 });
  const held = withBlocks(range, [parseCidr('10.0.3.0/26'), parseCidr('10.0.0.0/26'), parseCidr('10.0.255.192/26')]);
  expect(text(held)).toEqual([
    '10.0.0.1-10.0.0.63',
    '10.0.3.1-10.0.3.4',
    '10.0.3.6-10.0.3.63',
    // The range's broadcast address is never a pod's.
    '10.0.255.193-10.0.255.254',
  ]);
  expect(held.size).toBe(63n + 62n + 62n);
  expect(blockSizeIn(range, parseCidr('10.0.3.0/26'))).toBe(62n);
  // Adjacent blocks: the second block's first address stays out.
  expect(text(withBlocks(range, [parseCidr('10.0.1.0/26'), parseCidr('10.0.1.64/26')]))).toEqual([
    '10.0.1.1-10.0.1.63',
    '10.0.1.65-10.0.1.127',
  ]);
});

test('the next candidate walks the intervals and wraps from the last to the first', () => {
  const held = withBlocks(specOf({ subnet: '10.0.0.0/16', blocks: {} }), [
    parseCidr('10.0.0.0/26'),
    parseCidr('10.0.9.0/26'),
  ]);
  const next = (a: string) => fromBigInt(nextCandidate(held, toBigInt(a)), 4);
  expect(next('10.0.0.1')).toBe('10.0.0.2');
  expect(next('10.0.0.63')).toBe('10.0.9.1');
  expect(next('10.0.5.7')).toBe('10.0.9.1');
  expect(next('10.0.9.63')).toBe('10.0.0.1');
  // A cursor left in a block given back continues in the next one held.
  expect(next('10.0.200.9')).toBe('10.0.0.1');
});
