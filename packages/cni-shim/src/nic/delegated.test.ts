import type { IpLink } from '@ferry/net';
import { DELEGATED_GROUP, markerOf } from '@ferry/shared-types/link-marker';
import { expect, test } from 'vitest';
import { findInPod } from './delegated';

const rec = { containerIfIndex: 12, mac: '02:00:00:00:00:01', ifName: 'net1', hostIfName: 'ens1f0v3' };

test('the recorded ifindex finds the device whatever its name and MAC became', () => {
  const links: IpLink[] = [
    { ifindex: 12, ifname: 'bond-slave', address: '02:aa:aa:aa:aa:aa' },
    { ifindex: 13, ifname: 'net1', address: '02:00:00:00:00:01' },
  ];
  expect(findInPod(links, rec)?.ifindex).toBe(12);
});

test('then the MAC, current or permanent, then the name only under our marker', () => {
  expect(findInPod([{ ifindex: 3, ifname: 'x', address: '02:00:00:00:00:01' }], rec)?.ifindex).toBe(3);
  expect(
    findInPod([{ ifindex: 4, ifname: 'x', address: '02:bb:00:00:00:01', permaddr: '02:00:00:00:00:01' }], rec)?.ifindex,
  ).toBe(4);
  const stranger: IpLink = { ifindex: 5, ifname: 'net1', address: '02:cc:00:00:00:01' };
  expect(findInPod([stranger], rec)).toBeUndefined();
  expect(findInPod([{ ...stranger, ifalias: markerOf('ens1f0v3', 'eth0') }], rec)?.ifindex).toBe(5);
  expect(findInPod([{ ...stranger, group: String(DELEGATED_GROUP) }], rec)?.ifindex).toBe(5);
});
