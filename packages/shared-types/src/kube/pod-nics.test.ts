import { describe, expect, test } from 'vitest';
import { MAX_POD_NICS, MAX_POD_NICS_LENGTH, parsePodNics } from './pod-nics';

const parse = (value: unknown) => parsePodNics(typeof value === 'string' ? value : JSON.stringify(value));

describe('ferry.dev/nics', () => {
  test('each way of asking, with in-pod name and static addressing (what SwiftV2 carries)', () => {
    const nics = [
      { group: 'frontend' },
      { mac: '02:00:00:00:00:01', ifName: 'net1' },
      { group: 'dpdk', ifName: 'dpdk0', userspace: true },
      {
        pciAddress: '0000:18:02.5',
        ifName: 'data0',
        addresses: ['172.26.0.10/16', 'fd00:26::10/64'],
        gateway: '172.26.0.1',
        routes: [
          { dst: '10.0.0.0/8' },
          { dst: 'fd00::/8', gw: 'fd00:26::1' },
          { dst: '192.168.0.0/16', gw: '172.26.0.2' },
        ],
      },
    ];
    expect(parse(nics)).toEqual({ nics });
  });

  test('an empty list asks for no delegated NIC', () => {
    expect(parse([])).toEqual({ nics: [] });
  });

  // Whoever may create a pod writes this: every malformed or hostile form is refused, naming the entry
  // and the field, and nothing of it is used.
  test.for([
    ['not JSON', '[{group: frontend}]', /^not JSON: /],
    ['not a list', { group: 'frontend' }, /^\(root\): expected array$/],
    ['a list of strings', ['frontend'], /^\[0\]: expected object$/],
    ['nothing asked', [{ ifName: 'net1' }], /^\[0\]: needs one of group, mac or pciAddress$/],
    ['two ways at once', [{ group: 'a', mac: '02:00:00:00:00:01' }], /^\[0\]: gives group and mac: give only one$/],
    ['a number for a group', [{ group: 7 }], /^\[0\]\.group: expected string$/],
    ['a group with a slash', [{ group: '../etc' }], /^\[0\]\.group: must match/],
    ['a bad MAC', [{ mac: '02:00:00:00:00' }], /^\[0\]\.mac: not a valid mac$/],
    ['an upper-case PCI address', [{ pciAddress: '0000:18:02.A' }], /^\[0\]\.pciAddress: not a PCI address/],
    ['eth0', [{ group: 'a', ifName: 'eth0' }], /^\[0\]\.ifName: is reserved/],
    ['lo', [{ group: 'a', ifName: 'lo' }], /^\[0\]\.ifName: is reserved/],
    ['a name with a slash', [{ group: 'a', ifName: 'a/b' }], /^\[0\]\.ifName: cannot contain/],
    ['a name too long', [{ group: 'a', ifName: 'x'.repeat(16) }], /^\[0\]\.ifName: is longer than 15 bytes$/],
    [
      'the same ifName twice',
      [
        { group: 'a', ifName: 'net1' },
        { group: 'b', ifName: 'net1' },
      ],
      /^\[1\]\.ifName: is also entry \[0\]'s$/,
    ],
    [
      'the same MAC twice, spelled differently',
      [{ mac: '02:00:00:00:00:AA' }, { mac: '02:00:00:00:00:aa' }],
      /^\[1\]\.mac: is also entry \[0\]'s$/,
    ],
    [
      'the same address on two NICs',
      [
        { group: 'a', addresses: ['10.1.0.5/24'] },
        { group: 'b', addresses: ['10.1.0.5/16'] },
      ],
      /^\[1\]\.addresses\[0\]: is also entry \[0\]'s$/,
    ],
    [
      'addresses for a userspace device',
      [{ group: 'dpdk', userspace: true, addresses: ['10.1.0.5/24'] }],
      /^\[0\]\.addresses: is for a netdev: a userspace device \(userspace: true\) has none to configure$/,
    ],
    ['an address without prefix', [{ group: 'a', addresses: ['10.1.0.5'] }], /^\[0\]\.addresses\[0\]: matches none/],
    [
      'too many addresses',
      [{ group: 'a', addresses: ['10.0.0.1/8', '10.0.0.2/8', '10.0.0.3/8', '10.0.0.4/8', '10.0.0.5/8'] }],
      /^\[0\]\.addresses: must be at most 4 items$/,
    ],
    [
      'a gateway of no address family',
      [{ group: 'a', addresses: ['10.1.0.5/24'], gateway: 'fd00::1' }],
      /^\[0\]\.gateway: has no address of its family$/,
    ],
    [
      'a gateway without addresses',
      [{ group: 'a', gateway: '10.1.0.1' }],
      /^\[0\]\.gateway: has no address of its family$/,
    ],
    [
      'a route gw of the other family',
      [{ group: 'a', addresses: ['10.1.0.5/24'], routes: [{ dst: '10.0.0.0/8', gw: 'fd00::1' }] }],
      /^\[0\]\.routes\[0\]\.gw: is not of the family of dst$/,
    ],
    [
      'a routed route without an address',
      [{ group: 'a', routes: [{ dst: '10.0.0.0/8', gw: '10.1.0.1' }] }],
      /^\[0\]\.routes\[0\]: has a next hop/,
    ],
    [
      'too many routes',
      [{ group: 'a', routes: Array.from({ length: 17 }, () => ({ dst: '10.0.0.0/8' })) }],
      /^\[0\]\.routes: must be at most 16 items$/,
    ],
    ['an unknown key', [{ group: 'a', vlan: 7 }], /^\[0\]: unknown field "vlan"$/],
    ['a __proto__ key', '[{"group":"a","__proto__":{"admin":true}}]', /^\[0\]: unknown field "__proto__"$/],
    [
      'too many NICs',
      Array.from({ length: MAX_POD_NICS + 1 }, (_, i) => ({ group: `g${i}` })),
      /^\(root\): must be at most 8 items$/,
    ],
    ['too long to read', `[${' '.repeat(MAX_POD_NICS_LENGTH)}]`, /^is 16386 characters long; at most 16384 are read$/],
    ['deeply nested', `${'['.repeat(5000)}${']'.repeat(5000)}`, /^\[0\]: expected object$/],
  ] as const)('%s: refused, naming the entry and the field', ([, value, problem]) => {
    const r = parse(value);
    expect(r).not.toHaveProperty('nics');
    expect(r).toEqual({ problem: expect.stringMatching(problem) });
  });
});
