import { describe, expect, test } from 'vitest';
import {
  ADDRESSES_RELEASED_FINALIZER,
  blockNameOf,
  blockProblemOf,
  claimNameOf,
  claimProblemOf,
  type IPBlock,
  IPBlockSchema,
  IPClaimSchema,
  IPRangeSchema,
  networkNamePart,
  parseBlockCidr,
  rangeNameOf,
} from './ipam';

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const isDnsSubdomain = (name: string) =>
  name.length <= 253 && DNS_SUBDOMAIN.test(name) && name.split('.').every((l) => l.length <= 63);

describe('blockNameOf', () => {
  test('IPv4 and IPv6 blocks: one DNS-1123 name per block, whatever the spelling of the CIDR', () => {
    expect(blockNameOf('ferry', 4, '10.244.3.0/26')).toBe('ferry.v4.10-244-3-0-26');
    expect(blockNameOf('ferry', 6, 'fd00:10:244::40/122')).toBe('ferry.v6.fd00-0010-0244-0000-0000-0000-0000-0040-122');
    expect(blockNameOf('ferry', 6, 'FD00:0010:0244:0:0:0:0:40/122')).toBe(
      blockNameOf('ferry', 6, 'fd00:10:244::40/122'),
    );
    expect(blockNameOf('ferry', 6, '::/0')).toBe('ferry.v6.0000-0000-0000-0000-0000-0000-0000-0000-0');
    for (const n of [blockNameOf('ferry', 4, '0.0.0.0/0'), blockNameOf('a'.repeat(63), 6, 'ffff::/16')]) {
      expect(isDnsSubdomain(n), n).toBe(true);
    }
  });

  test('unique per block: every /26 of a /16 and every /122 of a /112 has its own name', () => {
    const names = new Set<string>();
    for (let i = 0; i < 1024; i++) names.add(blockNameOf('ferry', 4, `10.244.${i >> 2}.${(i & 3) * 64}/26`));
    expect(names.size).toBe(1024);
    const v6 = new Set<string>();
    for (let i = 0; i < 1024; i++) v6.add(blockNameOf('ferry', 6, `fd00::${(i * 64).toString(16)}/122`));
    expect(v6.size).toBe(1024);
    // One base, two sizes: two blocks, two names.
    expect(blockNameOf('ferry', 4, '10.244.0.0/26')).not.toBe(blockNameOf('ferry', 4, '10.244.0.0/24'));
  });

  test('refuses what is not a canonical block of the family (RangeError naming it)', () => {
    expect(() => blockNameOf('ferry', 4, '10.244.3.1/26')).toThrow(/10\.244\.3\.1\/26 has host bits set/);
    expect(() => blockNameOf('ferry', 4, 'fd00::/64')).toThrow(/not an IPv4 CIDR/);
    expect(() => blockNameOf('ferry', 6, '10.0.0.0/8')).toThrow(RangeError);
    for (const bad of [
      '10.244.3.0',
      '10.244.3.0/33',
      '10.244.3.0/026',
      '10.244.300.0/24',
      '1::2::3/64',
      'fd00::/129',
      'x/1',
    ]) {
      expect(() => blockNameOf('ferry', bad.includes(':') ? 6 : 4, bad), bad).toThrow(RangeError);
    }
  });

  test('network names that are not DNS labels: a readable label plus a hash, never equal to a DNS-safe network', () => {
    expect(networkNamePart('ferry')).toBe('ferry');
    expect(networkNamePart('sriov-net1')).toBe('sriov-net1');
    const odd = ['SRIOV', 'sriov', 'my_net', 'my.net', 'My.Net', '_x', 'a'.repeat(64), '-x', 'x_', '9'];
    const parts = odd.map(networkNamePart);
    expect(new Set(parts).size).toBe(odd.length);
    expect(networkNamePart('SRIOV')).toMatch(/^sriov\.[0-9a-f]{8}$/);
    expect(networkNamePart('SRIOV')).toBe(networkNamePart('SRIOV'));
    for (const network of [...odd, 'A'.repeat(255), '...', 'Ü']) {
      const name = blockNameOf(network, 6, 'fd00:10:244::40/122');
      expect(isDnsSubdomain(name), `${network} → ${name}`).toBe(true);
      expect(isDnsSubdomain(rangeNameOf(network, 4))).toBe(true);
    }
    // A DNS-safe network's part is one label; any other's is two: the kinds cannot meet.
    expect(networkNamePart('my-net').split('.')).toHaveLength(1);
    expect(networkNamePart('my_net').split('.')).toHaveLength(2);
  });

  test('parseBlockCidr gives the base and size', () => {
    expect(parseBlockCidr('10.244.3.64/26')).toEqual({ family: 4, base: 0x0af40340n, prefixLength: 26 });
    expect(parseBlockCidr('::ffff:10.0.0.0/120')).toEqual({ family: 6, base: 0xffff0a000000n, prefixLength: 120 });
    expect(parseBlockCidr('10.244.3.64/25')).toEqual({ problem: '10.244.3.64/25 has host bits set' });
  });
});

describe('claimNameOf', () => {
  test('one DNS-1123 name per address, IPv4 and IPv6, every spelling alike', () => {
    expect(claimNameOf('198.51.100.5')).toBe('v4.198-51-100-5');
    expect(claimNameOf('fd00:50::5')).toBe('v6.fd00-0050-0000-0000-0000-0000-0000-0005');
    expect(claimNameOf('FD00:50:0::5')).toBe(claimNameOf('fd00:50::5'));
    expect(claimNameOf('::ffff:198.51.100.5')).toBe('v6.0000-0000-0000-0000-0000-ffff-c633-6405');
    const names = new Set<string>();
    for (let i = 0; i < 256; i++) names.add(claimNameOf(`198.51.100.${i}`));
    for (let i = 0; i < 256; i++) names.add(claimNameOf(`fd00::${i.toString(16)}`));
    expect(names.size).toBe(512);
    for (const n of names) expect(isDnsSubdomain(n)).toBe(true);
  });

  test('refuses what is not an address', () => {
    for (const bad of [
      '198.51.100',
      '198.51.100.5/32',
      '198.051.100.5',
      'fd00::5::1',
      'g::1',
      '',
      '1:2:3:4:5:6:7:8:9',
    ]) {
      expect(() => claimNameOf(bad), bad).toThrow(RangeError);
    }
  });
});

const meta = (name: string) => ({
  name,
  uid: 'u-1',
  resourceVersion: '7',
  generation: 1,
  finalizers: [ADDRESSES_RELEASED_FINALIZER],
});

describe('schemas: objects as the API server sends them', () => {
  const wire = {
    apiVersion: 'ferry.dev/v1alpha1',
    kind: 'IPBlock',
    metadata: {
      ...meta('ferry.v4.10-244-3-0-26'),
      managedFields: [{ manager: 'x' }],
      labels: { 'ferry.dev/node': 'node-a' },
    },
    spec: { network: 'ferry', family: 4, cidr: '10.244.3.0/26', node: 'node-a' },
    status: {
      assigned: 3,
      conditions: [
        { type: 'Valid', status: 'True', reason: 'Valid', message: '', lastTransitionTime: '2026-12-01T00:00:00Z' },
      ],
    },
  };

  test('an IPBlock parses; fields ferryd does not read are dropped; its problems are none', () => {
    const b = IPBlockSchema.parse(wire);
    expect(b.metadata).not.toHaveProperty('managedFields');
    expect(b.status?.assigned).toBe(3);
    expect(blockProblemOf(b)).toBeUndefined();
  });

  test('a hand-edited IPBlock: bad shapes fail to parse, naming the field; a misaligned or misnamed one is a problem named', () => {
    const fail = (o: unknown) => {
      const r = IPBlockSchema.safeParse(o);
      expect(r.success).toBe(false);
      return r.error?.issues[0]?.path.join('.');
    };
    expect(fail({ ...wire, spec: { ...wire.spec, family: 5 } })).toBe('spec.family');
    expect(fail({ ...wire, spec: { ...wire.spec, cidr: '10.244.3.0' } })).toBe('spec.cidr');
    expect(fail({ ...wire, spec: { ...wire.spec, node: 'Node A' } })).toBe('spec.node');
    expect(fail({ ...wire, status: { assigned: -1 } })).toBe('status.assigned');
    expect(fail({ ...wire, kind: 'IPClaim' })).toBe('kind');
    expect(fail({ ...wire, metadata: { ...wire.metadata, resourceVersion: undefined } })).toBe(
      'metadata.resourceVersion',
    );
    const parse = (spec: object, name = wire.metadata.name): IPBlock =>
      IPBlockSchema.parse({ ...wire, metadata: { ...wire.metadata, name }, spec: { ...wire.spec, ...spec } });
    expect(blockProblemOf(parse({ cidr: '10.244.3.5/26' }))?.reason).toBe('Misaligned');
    expect(blockProblemOf(parse({ family: 6 }))?.reason).toBe('Misaligned');
    expect(blockProblemOf(parse({ cidr: '10.244.3.64/26' }))).toEqual({
      reason: 'NameMismatch',
      message: 'the IPBlock of ferry 10.244.3.64/26 must be named ferry.v4.10-244-3-64-26, not ferry.v4.10-244-3-0-26',
    });
  });

  test('an IPClaim and an IPRange parse; a claim named for another address is a problem', () => {
    const claim = IPClaimSchema.parse({
      apiVersion: 'ferry.dev/v1alpha1',
      kind: 'IPClaim',
      metadata: meta('v4.198-51-100-5'),
      spec: {
        address: '198.51.100.5',
        node: 'node-a',
        network: 'sriov',
        ifName: 'net1',
        pod: { namespace: 'a', name: 'web-1', uid: 'p-1' },
      },
    });
    expect(claimProblemOf(claim)).toBeUndefined();
    expect(claimProblemOf({ ...claim, metadata: { ...claim.metadata, name: 'v4.198-51-100-6' } })).toMatch(
      /must be named v4\.198-51-100-5/,
    );
    expect(IPClaimSchema.safeParse({ ...claim, spec: { ...claim.spec, ifName: 'a/b' } }).success).toBe(false);
    const r = IPRangeSchema.parse({
      apiVersion: 'ferry.dev/v1alpha1',
      kind: 'IPRange',
      metadata: meta('ferry.v4'),
      spec: { network: 'ferry', family: 4, cidr: '10.244.0.0/16', blockPrefixLength: 26 },
      status: { blocksTotal: 1024, blocksHeld: 3, blocksFree: 1021 },
    });
    expect(r.status?.blocksFree).toBe(1021);
    expect(IPRangeSchema.safeParse({ ...r, spec: { ...r.spec, blockPrefixLength: 200 } }).success).toBe(false);
  });
});
