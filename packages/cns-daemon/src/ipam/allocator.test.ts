import { join } from 'node:path';
import { NetworkConfigSchema } from '@ferry/shared-types/config/ferryd';
import { CniError, Code } from '@ferry/shared-types/errors';
import { expect, test } from 'vitest';
import { openDatabase } from '../store/db';
import { PoolStore } from '../store/pools';
import { tempDir } from '../testing/harness';
import { pickFree } from './allocator';
import { poolSpecsOf } from './pool';

test('a range its exclusions cover entirely is exhausted at once, without looking for a first candidate', (t) => {
  // The config check refuses such a pool (config.test.ts); the allocator must not spin on one regardless.
  const net = NetworkConfigSchema.parse({ name: 'n', ipv4: { subnet: '10.0.0.0/30', exclude: ['10.0.0.0/30'] } });
  const [spec] = poolSpecsOf(net);
  if (!spec) throw new Error('no pool spec');
  expect(spec.size).toBe(0n);
  const { db, close } = openDatabase(join(tempDir(t), 'ferry.db'));
  t.onTestFinished(close);
  const pools = new PoolStore(db);
  const row = pools.ensurePool('n', 4, spec.subnetText);
  if (!('id' in row)) throw new Error('pool not created');
  let err: unknown;
  try {
    pickFree(pools, spec, row.id, null, 0);
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(CniError);
  expect(err).toMatchObject({ code: Code.PoolExhausted, message: expect.stringContaining('10.0.0.0/30 is exhausted') });
});
