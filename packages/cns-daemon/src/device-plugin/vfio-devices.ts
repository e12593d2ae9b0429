/**
 * The device nodes a container needs for its userspace devices, as the SR-IOV network device plugin
 * gives them (its vfio info provider): the VFIO container `/dev/vfio/vfio` once, and `/dev/vfio/<group>`
 * for each device's IOMMU group (sysfs `iommu_group`), read-write, at the same path inside. A device
 * without a vfio group (a netdev) needs none.
 */
import type { GroupDevice } from './devices';
import type { DeviceSpec } from './protos';

const VFIO_DIR = '/dev/vfio';

export function vfioDeviceSpecsOf(devices: readonly GroupDevice[]): DeviceSpec[] {
  const groups = [...new Set(devices.flatMap((d) => (d.vfioGroup ? [d.vfioGroup] : [])))].sort();
  if (groups.length === 0) return [];
  return [`${VFIO_DIR}/vfio`, ...groups.map((g) => `${VFIO_DIR}/${g}`)].map((path) => ({
    containerPath: path,
    hostPath: path,
    permissions: 'rw',
  }));
}
