import type { IpLink } from '@ferry/net';
import { DELEGATED_GROUP, markerOf } from '@ferry/shared-types/link-marker';
import { expect, test } from 'vitest';
import { stateless } from './netns-cleanup';

const link = (l: Partial<IpLink> & { ifname: string }): IpLink => ({
  ifindex: 7,
  address: '02:00:00:00:00:07',
  link_type: 'ether',
  ...l,
});

test.for([
  ['loopback', link({ ifname: 'lo', link_type: 'loopback' }), 'leave'],
  ['our veth', link({ ifname: 'eth0', linkinfo: { info_kind: 'veth' } }), 'delete-veth'],
  ['another veth', link({ ifname: 'eth1', linkinfo: { info_kind: 'veth' } }), 'leave'],
  [
    'a delegated veth whose alias the app overwrote',
    link({ ifname: 'net2', linkinfo: { info_kind: 'veth' }, group: String(DELEGATED_GROUP) }),
    'send-home',
  ],
  ['our marked device', link({ ifname: 'net1', ifalias: markerOf('ens1f0v3', 'eth0') }), 'send-home'],
  ["another attachment's device", link({ ifname: 'net2', ifalias: markerOf('ens1f0v4', 'eth1') }), 'leave'],
  [
    'our device whose alias the app overwrote (still in our group)',
    link({ ifname: 'wan0', ifalias: 'renamed by the app', group: String(DELEGATED_GROUP) }),
    'send-home',
  ],
  ['an unmarked VF of another plugin', link({ ifname: 'net5', group: 'default' }), 'leave'],
  ['a macvlan of another plugin', link({ ifname: 'net9', linkinfo: { info_kind: 'macvlan' } }), 'leave'],
  ['a tunnel', link({ ifname: 'wg0', link_type: 'none', linkinfo: { info_kind: 'wireguard' } }), 'leave'],
] as const)('without ferryd, %s: %s', ([, l, expected]) => {
  expect(stateless(l, 'eth0')).toBe(expected);
});

test('without ferryd, a device whose alias the app overwrote goes home only if prevResult lists it in the pod (when given)', () => {
  const overwritten = link({ ifname: 'uplink', ifalias: 'the app was here', group: String(DELEGATED_GROUP) });
  expect(stateless(overwritten, 'net1', new Set(['02:00:00:00:00:07']))).toBe('send-home');
  // Another attachment's device (the primary's, say): this attachment's DEL leaves it.
  expect(stateless(overwritten, 'net1', new Set(['02:00:00:00:00:08']))).toBe('leave');
  // Its MAC changed by the app, its permanent one listed.
  const remac = { ...overwritten, address: '02:aa:00:00:00:01', permaddr: '02:00:00:00:00:07' };
  expect(stateless(remac, 'net1', new Set(['02:00:00:00:00:07']))).toBe('send-home');
  // A marked device is decided by its marker alone.
  expect(stateless(link({ ifname: 'net1', ifalias: markerOf('ens2f0v1', 'net1') }), 'net1', new Set())).toBe(
    'send-home',
  );
});
