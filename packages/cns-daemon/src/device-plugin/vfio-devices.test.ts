import { expect, test } from 'vitest';
import type { GroupDevice } from './devices';
import { vfioDeviceSpecsOf } from './vfio-devices';

const device = (id: string, vfioGroup?: string): GroupDevice => ({
  id,
  mac: '',
  healthy: true,
  free: true,
  pciAddress: id,
  ...(vfioGroup ? { vfioGroup } : {}),
});
const rw = (path: string) => ({ containerPath: path, hostPath: path, permissions: 'rw' });

test("userspace devices: /dev/vfio/vfio once, then each IOMMU group's node once", () => {
  const specs = vfioDeviceSpecsOf([device('0000:3b:02.2', '52'), device('0000:3b:02.1', '51'), device('x', '51')]);
  expect(specs).toEqual([rw('/dev/vfio/vfio'), rw('/dev/vfio/51'), rw('/dev/vfio/52')]);
});

test('netdevs need no device node', () => {
  expect(vfioDeviceSpecsOf([device('0000:3b:02.0')])).toEqual([]);
});
