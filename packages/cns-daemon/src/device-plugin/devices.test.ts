import type { Device } from '@ferry/shared-types/api/devices';
import { describe, expect, test } from 'vitest';
import type { PciFunction } from '../devices/sysfs';
import { envOf, type GroupDevice, groupDevicesOf, pluginDevicesOf, preferredOf } from './devices';

const device = (mac: string, group: string, state: Device['state'], pciAddress?: string): Device => ({
  id: pciAddress ?? mac,
  mac,
  group,
  state,
  ...(pciAddress ? { pciAddress } : {}),
});
const A = '02:00:00:00:00:0a';
const B = '02:00:00:00:00:0b';
const C = '02:00:00:00:00:0c';
const noSysfs = () => undefined;

test("a group's devices in ID order: on the node or in a Ferry pod is Healthy; neither is Unhealthy", () => {
  const devices = groupDevicesOf(
    [
      device(C, 'fe', 'missing'),
      device(B, 'fe', 'assigned'),
      device(A, 'fe', 'free'),
      device(A.replace('0a', '0d'), 'be', 'free'),
    ],
    'fe',
    noSysfs,
  );
  expect(devices).toEqual([
    { id: A, mac: A, healthy: true, free: true },
    { id: B, mac: B, healthy: true, free: false },
    { id: C, mac: C, healthy: false, free: false },
  ]);
  expect(pluginDevicesOf(devices)).toEqual([
    { ID: A, health: 'Healthy', topology: null },
    { ID: B, health: 'Healthy', topology: null },
    { ID: C, health: 'Unhealthy', topology: null },
  ]);
});

test('a PCI device is its PCI address, with its PF and its NUMA node as TopologyInfo; -1 in sysfs is no topology', () => {
  const fns: Record<string, PciFunction> = {
    '0000:3b:02.0': { address: '0000:3b:02.0', numaNode: 1, pf: { address: '0000:3b:00.0', vfIndex: 0 } },
    // The reader gives no numaNode for -1.
    '0000:3b:02.1': { address: '0000:3b:02.1', pf: { address: '0000:3b:00.0', vfIndex: 1 } },
  };
  const devices = groupDevicesOf(
    [device(B, 'fe', 'free', '0000:3b:02.1'), device(A, 'fe', 'free', '0000:3b:02.0'), device(C, 'fe', 'free')],
    'fe',
    (address) => fns[address],
  );
  expect(devices).toEqual([
    {
      id: '0000:3b:02.0',
      mac: A,
      healthy: true,
      free: true,
      pciAddress: '0000:3b:02.0',
      pfAddress: '0000:3b:00.0',
      numaNode: 1,
    },
    { id: '0000:3b:02.1', mac: B, healthy: true, free: true, pciAddress: '0000:3b:02.1', pfAddress: '0000:3b:00.0' },
    { id: C, mac: C, healthy: true, free: true },
  ]);
  expect(pluginDevicesOf(devices).map((d) => d.topology)).toEqual([{ nodes: [{ ID: 1 }] }, null, null]);
});

test('a VF whose PF has no carrier is Unhealthy, free on the node or in a pod', () => {
  const down = (mac: string, state: Device['state']): Device => ({
    ...device(mac, 'fe', state),
    pfWithoutCarrier: 'pf0',
  });
  expect(
    groupDevicesOf([down(A, 'free'), down(B, 'assigned'), device(C, 'fe', 'free')], 'fe', () => undefined),
  ).toEqual([
    { id: A, mac: A, healthy: false, free: true },
    { id: B, mac: B, healthy: false, free: false },
    { id: C, mac: C, healthy: true, free: true },
  ]);
});

test('the preferred allocation: what must be included, then free devices, then those an attachment still holds', () => {
  const devices = groupDevicesOf(
    [device(A, 'fe', 'assigned'), device(B, 'fe', 'free'), device(C, 'fe', 'free')],
    'fe',
    noSysfs,
  );
  const ask = (available: string[], must: string[], size: number) =>
    preferredOf(devices, { availableDeviceIDs: available, mustIncludeDeviceIDs: must, allocationSize: size });
  expect(ask([A, B, C], [], 1)).toEqual([B]);
  expect(ask([C, A, B], [], 3)).toEqual([B, C, A]);
  expect(ask([A, B, C], [A], 2)).toEqual([A, B]);
  // Never fewer than the kubelet must include, never more than it may.
  expect(ask([A, B, C], [A, C], 1)).toEqual([A, C]);
  expect(ask([A], [], 2)).toEqual([A]);
});

describe('the preferred allocation keeps a pod on one NUMA node, and with preferSamePf on one PF', () => {
  // Two PFs on NUMA node 0 (3b:00.0 with VFs .0 .1, 3b:00.1 with VFs .2 .3), one on node 1 (5e:00.0).
  const vf = (address: string, pfAddress: string, numaNode: number, free = true): GroupDevice => ({
    id: address,
    mac: A,
    healthy: true,
    free,
    pciAddress: address,
    pfAddress,
    numaNode,
  });
  const V0 = vf('0000:3b:02.0', '0000:3b:00.0', 0);
  const V1 = vf('0000:3b:02.1', '0000:3b:00.0', 0);
  const V2 = vf('0000:3b:0a.0', '0000:3b:00.1', 0);
  const V3 = vf('0000:3b:0a.1', '0000:3b:00.1', 0);
  const W0 = vf('0000:5e:02.0', '0000:5e:00.0', 1);
  const W1 = vf('0000:5e:02.1', '0000:5e:00.0', 1);
  const ids = (...ds: GroupDevice[]) => ds.map((d) => d.id);
  const ask = (
    devices: GroupDevice[],
    available: GroupDevice[],
    size: number,
    preferSamePf = false,
    must: GroupDevice[] = [],
  ) =>
    preferredOf(
      devices,
      { availableDeviceIDs: ids(...available), mustIncludeDeviceIDs: ids(...must), allocationSize: size },
      { preferSamePf },
    );

  test('one NUMA node where the ID order would mix them', () => {
    const all = [V0, W0, W1];
    // The kubelet's own pick would be the first two in order: V0 (node 0) and W0 (node 1).
    expect(ask(all, all, 2)).toEqual(ids(W0, W1));
    // Alignment before freeness: a held device on the same node rather than a free one across.
    const held = { ...W1, free: false };
    expect(ask([V0, W0, held], [V0, W0, held], 2)).toEqual(ids(W0, held));
    // The node of the devices that must be included.
    expect(ask([V0, V1, W0, W1], [V0, V1, W0, W1], 2, false, [W1])).toEqual(ids(W1, W0));
    // No node holds enough: the fullest first.
    expect(ask([V0, W0, W1], [V0, W0, W1], 3)).toEqual(ids(W0, W1, V0));
  });

  test('one PF only when asked, within the NUMA node', () => {
    const all = [V0, V2, V3];
    expect(ask(all, all, 2)).toEqual(ids(V0, V2));
    expect(ask(all, all, 2, true)).toEqual(ids(V2, V3));
    // No PF holds enough: one NUMA node still.
    expect(ask([V0, V2, W0], [V0, V2, W0], 2, true)).toEqual(ids(V0, V2));
  });
});

test("a container's environment: its devices' MACs by group, and its PCI devices by resource as the SR-IOV convention has it", () => {
  const pciDevice = (mac: string, pciAddress: string): GroupDevice => ({
    id: pciAddress,
    mac,
    healthy: true,
    free: true,
    pciAddress,
  });
  expect(
    envOf('front-end.v2', 'ferry.dev/front-end.v2', [pciDevice(A, '0000:3b:02.0'), pciDevice(B, '0000:3b:02.1')]),
  ).toEqual({
    FERRY_DEVICES_FRONT_END_V2: `${A},${B}`,
    'PCIDEVICE_FERRY_DEV_FRONT-END_V2': '0000:3b:02.0,0000:3b:02.1',
  });
  expect(envOf('sriov', 'ferry.dev/sriov', [{ id: C, mac: C, healthy: true, free: true }])).toEqual({
    FERRY_DEVICES_SRIOV: C,
  });
});
