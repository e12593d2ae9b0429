/** Finding the node's devices (by MAC in any spelling, by PCI address through sysfs) and the free check. */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Code } from '@ferry/shared-types/errors';
import { expect, test } from 'vitest';
import type { InterfaceRow } from '../store/rows';
import { addDevice, failure, useAttachments } from '../testing/attachments-world';
import { tempDir } from '../testing/harness';
import { checkFree, DeviceLookup, isMac } from './device-lookup';
import type { Asker } from './pod-nic-refusal';

const FE1 = '02:00:00:00:fe:01';
const VF1 = '02:00:00:00:0f:01';
const PCI_VF1 = '0000:18:02.1';
const WHO: Asker = { namespace: 'team-a', name: 'web', pod: 'pod team-a/web' };

test('a device by MAC in any spelling, by the PCI address sysfs shows its netdev at; nothing for either otherwise', (t) => {
  const sysfs = tempDir(t);
  mkdirSync(join(sysfs, 'bus', 'pci', 'devices', PCI_VF1, 'net', 'ens2f0v1'), { recursive: true });
  const w = useAttachments(t, { sysfsRoot: sysfs });
  addDevice(w, FE1, 'frontend', 'ens1f0');
  addDevice(w, VF1, 'sriov', 'ens2f0v1');
  const lookup = new DeviceLookup(w.devices, w.pci);
  expect(lookup.byMac('02-00-00-00-FE-01')?.host_if_name).toBe('ens1f0');
  expect(lookup.byMac('02:00:00:00:00:99')).toBeUndefined();
  expect(lookup.byPci(PCI_VF1)?.mac).toBe(VF1);
  expect(lookup.byPci('0000:99:00.0')).toBeUndefined();
  // Without sysfs nothing is found by PCI address.
  expect(new DeviceLookup(w.devices).byPci(PCI_VF1)).toBeUndefined();
  expect([isMac('02-00-00-00-FE-01'), isMac(PCI_VF1), isMac('02:00:00:00:fe')]).toEqual([true, false, false]);
});

test('a device is free for a pod when on the node, held by no one and reserved for no other pod', (t) => {
  const w = useAttachments(t);
  addDevice(w, FE1, 'frontend', 'ens1f0');
  const row = w.devices.get(FE1);
  if (!row) throw new Error('no device row');
  expect(() => checkFree(row, WHO, 'device x', [])).not.toThrow();
  const held = { ...row, interface_id: 7 };
  expect(failure(() => checkFree(held, WHO, 'device x', []))).toEqual({
    code: Code.DeviceUnavailable,
    msg: 'device x is held by another pod',
  });
  const own: InterfaceRow[] = [
    {
      id: 7,
      attachment_id: 3,
      position: 1,
      container_id: 'c1',
      if_name: 'net1',
      endpoint_id: 'c1-net1',
      nic_type: 'DelegatedNIC',
      routes_json: '[]',
      mac: null,
      container_if_index: null,
      host_veth_name: null,
      host_if_name: 'ens1f0',
      device_mac: FE1,
      static_addresses_json: null,
      userspace_pci_address: null,
    },
  ];
  expect(failure(() => checkFree(held, WHO, 'device x', own)).msg).toBe(
    'device x is held by another attachment of this pod',
  );
  expect(failure(() => checkFree({ ...row, present: 0 }, WHO, 'device x', [])).msg).toBe('device x is not on the node');
  const reserved = { ...row, reserved_namespace: 'team-a', reserved_pod: 'other' };
  expect(failure(() => checkFree(reserved, WHO, 'device x', [])).msg).toBe('device x is reserved for another pod');
  expect(() => checkFree({ ...reserved, reserved_pod: 'web' }, WHO, 'device x', [])).not.toThrow();
});
