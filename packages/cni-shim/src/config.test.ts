import { NetConfSchema } from '@ferry/shared-types/cni/config';
import { expect, test } from 'vitest';
import { acceptPlainNetConf, PLAIN_KEY_CHECKS, SCHEMA_ONLY_KEYS } from './config';

const BASE = { cniVersion: '1.0.0', name: 'ferry', type: 'ferry-cni' };
const TYPICAL = [
  BASE,
  { ...BASE, daemonSocket: '/run/ferry/ferryd.sock', logFile: '/var/log/ferry/cni.log', logLevel: 'debug' },
  { ...BASE, mtu: 1450, deleteQueue: '/var/lib/ferry/q', deleteQueueLimit: 100, ipMasq: false, unknownKey: [1] },
  { ...BASE, prevResult: { cniVersion: '1.0.0', interfaces: [{ name: 'eth0' }], ips: [] } },
  { ...BASE, args: { cni: { ips: ['10.0.0.1'] } }, capabilities: { portMappings: true } },
];
const VALUES: unknown[] = [
  '',
  'ferry',
  'bad name!',
  'x'.repeat(300),
  'rel/path',
  '/abs/path',
  'debug',
  'loud',
  0,
  1,
  1.5,
  67,
  68,
  1450,
  65535,
  65536,
  1_000_000,
  1_000_001,
  -1,
  Number.NaN,
  true,
  false,
  null,
  {},
  { a: 1 },
  [],
  ['x'],
];

test('every key of NetConfSchema is either checked by hand or left to the schema', () => {
  const keys = Object.keys(NetConfSchema._zod.def.shape);
  for (const key of keys) expect(key in PLAIN_KEY_CHECKS || SCHEMA_ONLY_KEYS.has(key), key).toBe(true);
  for (const key of [...Object.keys(PLAIN_KEY_CHECKS), ...SCHEMA_ONLY_KEYS]) expect(keys).toContain(key);
});

test('the usual configs take the hand-checked path, with what the schema returns', () => {
  for (const doc of TYPICAL) {
    const fast = acceptPlainNetConf(doc);
    expect(fast, JSON.stringify(doc)).toBeDefined();
    expect(fast).toEqual(NetConfSchema.parse(doc));
  }
});

test('whatever the hand check accepts, the schema accepts with the same result (every key × every value)', () => {
  let accepted = 0;
  let refused = 0;
  for (const key of [...Object.keys(PLAIN_KEY_CHECKS), ...SCHEMA_ONLY_KEYS, 'unknownKey']) {
    for (const value of VALUES) {
      for (const base of TYPICAL) {
        const doc = { ...base, [key]: value };
        const fast = acceptPlainNetConf(doc);
        const oracle = NetConfSchema.safeParse(doc);
        if (fast === undefined) {
          refused++;
          continue;
        }
        accepted++;
        expect(oracle.success, `${key}=${JSON.stringify(value)}`).toBe(true);
        expect(fast, `${key}=${JSON.stringify(value)}`).toEqual(oracle.data);
      }
    }
  }
  // Both paths are exercised: the hand check neither accepts nothing nor everything.
  expect(accepted).toBeGreaterThan(100);
  expect(refused).toBeGreaterThan(100);
  // A missing required key is the schema's to word.
  expect(acceptPlainNetConf({ cniVersion: '1.0.0', type: 'ferry-cni' })).toBeUndefined();
});
