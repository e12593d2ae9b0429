import { expect, test } from 'vitest';
import { FRESH_CLAIM_MS, type HeldBlock, type PoolDemand, planBlocks } from './plan';

const block = (
  i: number,
  used: number,
  emptySinceMs: number | null = used === 0 ? 0 : null,
  claimedAtMs = 0,
): HeldBlock => ({
  cidr: `10.0.${i}.0/26`,
  base: BigInt(i) << 8n,
  allocatable: 63,
  used,
  emptySinceMs,
  claimedAtMs,
});

const demand = (over: Partial<PoolDemand>): PoolDemand => ({
  minFree: 16,
  maxFree: 79,
  maxBlocks: 20,
  releaseAfterMs: 300_000,
  perBlock: 63,
  held: [],
  claiming: 0,
  releasing: 0,
  pending: 0,
  orphanBlocks: [],
  isRangeExhausted: false,
  nowMs: 1_000_000,
  ...over,
});

test('a node without blocks claims one; a burst of scheduled pods claims enough blocks at once', () => {
  expect(planBlocks(demand({}))).toEqual({ free: 0, claimFirst: [], claimNew: 1 });
  // 150 pods the watch shows scheduled here: (16 - (63 - 150)) / 63 → 2 more blocks, in one pass.
  expect(planBlocks(demand({ held: [block(1, 0, null)], pending: 150 }))).toMatchObject({ free: -87, claimNew: 2 });
  // Claims in flight count as held: no second batch for the same demand.
  expect(planBlocks(demand({ held: [block(1, 0, null)], pending: 150, claiming: 2 }))).toMatchObject({ claimNew: 0 });
});

test('minFree 0: an ADD waiting for room (pending) still gets a block', () => {
  expect(planBlocks(demand({ minFree: 0, held: [block(1, 63)], pending: 1 })).claimNew).toBe(1);
  expect(planBlocks(demand({ minFree: 0, held: [block(1, 63)] })).claimNew).toBe(0);
});

test('no more than maxBlocks, releases in flight included; an exhausted range claims nothing', () => {
  const full = [block(1, 63), block(2, 63)];
  expect(planBlocks(demand({ maxBlocks: 3, held: full, releasing: 1 })).claimNew).toBe(0);
  expect(planBlocks(demand({ maxBlocks: 3, held: full })).claimNew).toBe(1);
  expect(planBlocks(demand({ held: full, isRangeExhausted: true }))).toMatchObject({ free: 0, claimNew: 0 });
});

test('blocks of orphaned addresses are claimed first, within maxBlocks', () => {
  const plan = planBlocks(demand({ maxBlocks: 2, held: [block(1, 10)], orphanBlocks: ['10.0.7.0/26', '10.0.8.0/26'] }));
  expect(plan).toEqual({ free: 53, claimFirst: ['10.0.7.0/26'], claimNew: 0 });
});

test('an empty block goes back after releaseAfterSec once free stays above maxFree, the highest first', () => {
  const held = [block(1, 10), block(2, 0, 0), block(3, 0, 0)];
  // free = 3 × 63 − 10 = 179 > 79.
  expect(planBlocks(demand({ held, nowMs: 299_999 })).release).toBeUndefined();
  expect(planBlocks(demand({ held, nowMs: 300_000 })).release).toBe('10.0.3.0/26');
  // Pods on their way keep it.
  expect(planBlocks(demand({ held, nowMs: 300_000, pending: 101 })).release).toBeUndefined();
  // Not while a claim is in flight.
  expect(planBlocks(demand({ held, nowMs: 300_000, claiming: 1 })).release).toBeUndefined();
});

test('the scaling converges: after a claim no release, after a release no claim', () => {
  // Just below minFree: claim one; with it held (empty), free is below maxFree: kept.
  const before = demand({ held: [block(1, 48)] });
  expect(planBlocks(before).claimNew).toBe(1);
  expect(planBlocks({ ...before, held: [block(1, 48), block(2, 0, 0)], nowMs: 10_000_000 }).release).toBeUndefined();
  // Just above maxFree: release one; without it, free stays at least minFree.
  const over = demand({ held: [block(1, 46), block(2, 0, 0)], nowMs: 10_000_000 });
  expect(planBlocks(over).release).toBe('10.0.2.0/26');
  expect(planBlocks({ ...over, held: [block(1, 46)] }).claimNew).toBe(0);
});

test('the range exhausted: empty blocks go back at once, as long as the node keeps minFree', () => {
  const held = [block(1, 40), block(2, 0, 999_999)];
  expect(planBlocks(demand({ held, isRangeExhausted: true })).release).toBe('10.0.2.0/26');
  expect(planBlocks(demand({ held: [block(1, 50), block(2, 0, 999_999)], isRangeExhausted: true })).release).toBe(
    undefined,
  );
});

test('the range exhausted: a block claimed a moment ago is kept for the ADD that caused the claim', () => {
  const fresh = (claimedAtMs: number) => [block(1, 40), block(2, 0, 999_999, claimedAtMs)];
  const nowMs = 1_000_000;
  expect(planBlocks(demand({ held: fresh(nowMs - 1), isRangeExhausted: true })).release).toBeUndefined();
  expect(planBlocks(demand({ held: fresh(nowMs - FRESH_CLAIM_MS), isRangeExhausted: true })).release).toBe(
    '10.0.2.0/26',
  );
  // releaseAfterSec shorter than the grace bounds it.
  expect(planBlocks(demand({ held: fresh(nowMs - 1), releaseAfterMs: 0, isRangeExhausted: true })).release).toBe(
    '10.0.2.0/26',
  );
});
