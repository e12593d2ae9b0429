import { isNetConf } from '@ferry/shared-types/checks';
import { NetConfSchema } from '@ferry/shared-types/cni/config';
import { CniError, Code } from '@ferry/shared-types/errors';
import { expect, test } from 'vitest';
import { parseNetConf } from './config';

const BASE = { cniVersion: '1.0.0', name: 'ferry', type: 'ferry-cni' };
const TYPICAL = [
  BASE,
  { ...BASE, daemonSocket: '/run/ferry/ferryd.sock', logFile: '/var/log/ferry/cni.log', logLevel: 'debug' },
  { ...BASE, mtu: 1450, deleteQueue: '/var/lib/ferry/q', deleteQueueLimit: 100, ipMasq: false, unknownKey: [1] },
  { ...BASE, prevResult: { cniVersion: '1.0.0', interfaces: [{ name: 'eth0' }], ips: [] } },
  { ...BASE, args: { cni: { ips: ['10.0.0.1'] } }, capabilities: { portMappings: true } },
  { ...BASE, delegatedNICs: { group: 'frontend', count: 1 }, daemonTimeouts: { addWaitMs: 0 } },
];

test('the usual configs take the generated check, and come out as the schema returns them', async () => {
  for (const doc of TYPICAL) {
    expect(isNetConf(doc), JSON.stringify(doc)).toBe(true);
    expect(await parseNetConf(doc, 'ADD')).toEqual(NetConfSchema.parse(doc));
  }
});

test.each([
  [{ ...BASE, mtu: 67 }, 'invalid network config: mtu: must be at least 68'],
  [{ ...BASE, name: 'bad name!' }, 'invalid network config: name: must match'],
  [{ ...BASE, daemonSocket: 'rel/path' }, 'invalid network config: daemonSocket: must be an absolute path'],
  [{ ...BASE, delegatedNICs: { group: 'frontend', count: 17 } }, 'invalid network config: delegatedNICs.count'],
])('a config the check refuses is worded by the schema: %j', async (doc, message) => {
  expect(isNetConf(doc)).toBe(false);
  const err = await parseNetConf(doc, 'ADD').catch((e: unknown) => e);
  expect(err).toBeInstanceOf(CniError);
  expect((err as CniError).code).toBe(Code.InvalidConfig);
  expect((err as CniError).message).toContain(message);
});
