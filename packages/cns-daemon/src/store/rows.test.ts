import { expect, test } from 'vitest';
import { isPoolRow } from './row-checks';
import { PoolRowSchema, parseRow } from './rows';

const pool = { id: 1, network: 'ferry', family: 6, subnet: 'fd00::/64', cursor_hex: null };

test('a row the generated check takes is the row itself', () => {
  expect(parseRow(PoolRowSchema, pool, 'pools', isPoolRow)).toBe(pool);
});

test('a row that does not fit is still reported by zod, naming the table and the column', () => {
  expect(() => parseRow(PoolRowSchema, { ...pool, family: 5 }, 'pools', isPoolRow)).toThrow(
    /corrupt pools row .*family/,
  );
  // A column the schema does not know: the check leaves the row to zod, which drops it, as before.
  expect(parseRow(PoolRowSchema, { ...pool, extra: 1 }, 'pools', isPoolRow)).toEqual(pool);
});
