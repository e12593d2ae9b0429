import { expect, test } from 'vitest';
import { type CniError, Code } from '../errors';
import { parseAs } from '../parse';
import { NetConfSchema } from './config';

const base = { cniVersion: '1.1.0', name: 'ferry', type: 'ferry-cni' };
const parse = (v: unknown) => parseAs(NetConfSchema, v, Code.InvalidConfig, 'invalid network config');

test('accepts the minimal config and keeps unknown keys', () => {
  const conf = parse({ ...base, somethingElse: { a: 1 } });
  expect(conf.name).toBe('ferry');
  expect(conf).toHaveProperty('somethingElse');
});

test("accepts Ferry's keys and the runtime's", () => {
  const conf = parse({
    ...base,
    daemonSocket: '/run/ferry/ferryd.sock',
    logFile: '/var/log/ferry/cni.log',
    deleteQueue: '/var/lib/ferry/delete-queue',
    delegatedNICs: { group: 'frontend', count: 2 },
    mtu: 1450,
    runtimeConfig: { mac: '0a:58:0a:f4:01:05', portMappings: [{ hostPort: 8080, containerPort: 80, protocol: 'tcp' }] },
    'cni.dev/valid-attachments': [{ containerID: 'abc', ifname: 'eth0' }],
  });
  expect(conf.delegatedNICs).toEqual({ group: 'frontend', count: 2 });
});

test.for([
  [{ ...base, name: '../etc' }, 'name: must match'],
  [{ ...base, name: undefined }, 'name: '],
  [{ ...base, cniVersion: 1 }, 'cniVersion: '],
  [{ ...base, daemonSocket: 'relative.sock' }, 'daemonSocket: must be an absolute path'],
  [{ ...base, delegatedNICs: { group: 'frontend', count: 0 } }, 'delegatedNICs.count: '],
  [{ ...base, delegatedNICs: { group: 'frontend', count: 1.5 } }, 'delegatedNICs.count: '],
  [{ ...base, mtu: 10 }, 'mtu: '],
  [{ ...base, runtimeConfig: { mac: 'zz' } }, 'runtimeConfig.mac: '],
  [{ ...base, 'cni.dev/valid-attachments': [{ ifname: 'eth0' }] }, 'cni.dev/valid-attachments[0].containerID: '],
] as const)('rejects %j naming %s', ([input, where]) => {
  try {
    parse(input);
    expect.unreachable();
  } catch (err) {
    expect((err as CniError).code).toBe(Code.InvalidConfig);
    expect((err as CniError).message).toContain(`invalid network config: ${where}`);
  }
});

test.for([
  [{ ...base, mtu: '1500' }, 'invalid network config: mtu: expected number'],
  [
    { ...base, delegatedNICs: { group: 'frontend', count: 0 } },
    'invalid network config: delegatedNICs.count: must be at least 1',
  ],
  [
    { ...base, delegatedNICs: { group: 'frontend', count: 1, extra: true } },
    'invalid network config: delegatedNICs: unknown field "extra"',
  ],
  [
    { ...base, logLevel: 'loud' },
    'invalid network config: logLevel: must be one of "debug", "info", "warn", "error", "silent"',
  ],
  [{ ...base, runtimeConfig: { mac: 'zz' } }, 'invalid network config: runtimeConfig.mac: not a valid mac'],
  [{ ...base, logMaxSizeKiB: -1 }, 'invalid network config: logMaxSizeKiB: must be at least 0'],
  [{ ...base, logMaxBackups: 1.5 }, 'invalid network config: logMaxBackups: expected int'],
] as const)('the message says what was wrong, not just where: %j', ([input, msg]) => {
  expect(() => parse(input)).toThrow(msg);
});
