import { describe, expect, test } from 'vitest';
import { backoffDelayMs } from './backoff';

describe('backoffDelayMs', () => {
  const opts = { initialMs: 500, maxMs: 30_000 };

  test('doubles from initialMs per failure', () => {
    const mid = () => 0.5; // no jitter
    expect([1, 2, 3, 4].map((n) => backoffDelayMs(n, opts, mid))).toEqual([500, 1000, 2000, 4000]);
  });

  test('never exceeds maxMs, however many failures and whatever the jitter', () => {
    for (const failures of [7, 8, 20, 1000, Number.MAX_SAFE_INTEGER]) {
      expect(backoffDelayMs(failures, opts, () => 0.999)).toBe(30_000);
      expect(backoffDelayMs(failures, opts, () => 0)).toBe(24_000);
    }
  });

  test('jitter stays within ±20 % of the doubled delay', () => {
    expect(backoffDelayMs(3, opts, () => 0)).toBe(1600);
    expect(backoffDelayMs(3, opts, () => 1)).toBe(2400);
  });
});
