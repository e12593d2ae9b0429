import type { Device } from '@ferry/shared-types/api/devices';
import { expect, test } from 'vitest';
import { envOf, groupDevicesOf, pluginDevicesOf, preferredOf } from './devices';

const device = (mac: string, group: string, state: Device['state']): Device => ({ id: mac, mac, group, state });
const A = '02:00:00:00:00:0a';
const B = '02:00:00:00:00:0b';
const C = '02:00:00:00:00:0c';

test("a group's devices in ID order: on the node or in a Ferry pod is Healthy; neither is Unhealthy", () => {
  const devices = groupDevicesOf(
    [
      device(C, 'fe', 'missing'),
      device(B, 'fe', 'assigned'),
      device(A, 'fe', 'free'),
      device(A.replace('0a', '0d'), 'be', 'free'),
    ],
    'fe',
  );
  expect(devices).toEqual([
    { id: A, healthy: true, free: true },
    { id: B, healthy: true, free: false },
    { id: C, healthy: false, free: false },
  ]);
  expect(pluginDevicesOf(devices)).toEqual([
    { ID: A, health: 'Healthy' },
    { ID: B, health: 'Healthy' },
    { ID: C, health: 'Unhealthy' },
  ]);
});

test('a VF whose PF has no carrier is Unhealthy, free on the node or in a pod', () => {
  const down = (mac: string, state: Device['state']): Device => ({
    ...device(mac, 'fe', state),
    pfWithoutCarrier: 'pf0',
  });
  expect(groupDevicesOf([down(A, 'free'), down(B, 'assigned'), device(C, 'fe', 'free')], 'fe')).toEqual([
    { id: A, healthy: false, free: true },
    { id: B, healthy: false, free: false },
    { id: C, healthy: true, free: true },
  ]);
});

test('the preferred allocation: what must be included, then free devices, then those an attachment still holds', () => {
  const devices = groupDevicesOf([device(A, 'fe', 'assigned'), device(B, 'fe', 'free'), device(C, 'fe', 'free')], 'fe');
  const ask = (available: string[], must: string[], size: number) =>
    preferredOf(devices, { availableDeviceIDs: available, mustIncludeDeviceIDs: must, allocationSize: size });
  expect(ask([A, B, C], [], 1)).toEqual([B]);
  expect(ask([C, A, B], [], 3)).toEqual([B, C, A]);
  expect(ask([A, B, C], [A], 2)).toEqual([A, B]);
  // Never fewer than the kubelet must include, never more than it may.
  expect(ask([A, B, C], [A, C], 1)).toEqual([A, C]);
  expect(ask([A], [], 2)).toEqual([A]);
});

test("a container's environment names its devices by group", () => {
  expect(envOf('front-end.v2', [A, B])).toEqual({ FERRY_DEVICES_FRONT_END_V2: `${A},${B}` });
});
