import { describe, expect, test } from 'vitest';
import type { AnyResult } from './any-result';
import { convertResult } from './convert';
import { resultSchemaFor } from './result';
import { SUPPORTED_VERSIONS } from './versions';

// One result, as each version prints it. The 1.x goldens carry the interface fields only 1.x knows;
// the 0.x goldens lose them and gain ips[].version (pkg/types/100 GetAsVersion → 040).
const v1 = {
  interfaces: [
    { name: 'fry0123456789ab', mac: 'ee:ee:ee:ee:ee:ee' },
    { name: 'eth0', mac: '0a:58:0a:f4:01:05', mtu: 1450, sandbox: '/var/run/netns/pod', pciID: '0000:04:00.5' },
  ],
  ips: [
    { address: '10.244.1.5/32', gateway: '169.254.1.1', interface: 1 },
    { address: 'fd00:10:244:1::5/128', gateway: 'fe80::ecee:eeff:feee:eeee', interface: 1 },
  ],
  routes: [
    { dst: '0.0.0.0/0', gw: '169.254.1.1' },
    { dst: '::/0', gw: 'fe80::ecee:eeff:feee:eeee' },
  ],
  dns: { nameservers: ['10.96.0.10'], search: ['svc.cluster.local'] },
};
const v0 = {
  interfaces: [
    { name: 'fry0123456789ab', mac: 'ee:ee:ee:ee:ee:ee' },
    { name: 'eth0', mac: '0a:58:0a:f4:01:05', sandbox: '/var/run/netns/pod' },
  ],
  ips: [
    { version: '4', address: '10.244.1.5/32', gateway: '169.254.1.1', interface: 1 },
    { version: '6', address: 'fd00:10:244:1::5/128', gateway: 'fe80::ecee:eeff:feee:eeee', interface: 1 },
  ],
  routes: v1.routes,
  dns: v1.dns,
};
const golden = (v: string) => JSON.stringify({ cniVersion: v, ...(v.startsWith('1.') ? v1 : v0) });
// 0.x never had mtu/pciID, so a result that went through 0.x comes back to 1.x without them.
const v1ViaV0 = { ...v0, ips: v1.ips };
const expected = (from: string, to: string) =>
  to.startsWith('1.') && !from.startsWith('1.') ? JSON.stringify({ cniVersion: to, ...v1ViaV0 }) : golden(to);

describe.for(SUPPORTED_VERSIONS)('result %s', (to) => {
  test.for(SUPPORTED_VERSIONS)('from %s converts to the golden', (from) => {
    const input: AnyResult = JSON.parse(golden(from));
    const out = convertResult(input, to);
    expect(JSON.stringify(out)).toBe(expected(from, to));
    expect(resultSchemaFor(to).safeParse(out).success).toBe(true);
  });

  test('the golden validates against its own schema only where shapes match', () => {
    const parsed = JSON.parse(golden(to));
    expect(resultSchemaFor(to).safeParse(parsed).success).toBe(true);
    for (const other of SUPPORTED_VERSIONS) {
      const sameShape = other.startsWith('1.') === to.startsWith('1.');
      if (other === to || sameShape) continue;
      // A result of the other shape never passes: 0.x has ips[].version, 1.x has mtu/pciID.
      expect(resultSchemaFor(other).safeParse({ ...parsed, cniVersion: other }).success).toBe(false);
    }
  });
});

test('conversion does not mutate its input and keeps unknown keys of a chained plugin', () => {
  const input = JSON.parse(golden('1.1.0'));
  input.interfaces[1].extra = 'kept';
  const before = JSON.stringify(input);
  const out = convertResult(input, '0.4.0');
  expect(JSON.stringify(input)).toBe(before);
  expect(out.interfaces?.[1]).toMatchObject({ extra: 'kept' });
  expect(out.interfaces?.[1]).not.toHaveProperty('mtu');
});

test('a 0.x result without ips[].version fails its strict schema', () => {
  const bad = JSON.parse(golden('0.4.0'));
  delete bad.ips[0].version;
  expect(resultSchemaFor('0.4.0').safeParse(bad).success).toBe(false);
});
