/**
 * What an interface row records of the device it holds: a netdev's host name and MAC (DEL brings it home
 * by them), or a userspace device's PCI address (no netdev: nothing of it moves, so there is nothing else
 * to record). A userspace device takes no address, route or static address: it has no netdev for them.
 */
import { CniError, Code } from '@ferry/shared-types/errors';
import type { DeviceKind } from '../devices/device-kind';
import { isPciId } from '../devices/identity';
import type { WantedDevice } from './free-devices';

export type DeviceColumns = { hostIfName: string; deviceMac: string } | { userspacePciAddress: string };

export function deviceColumnsOf(w: WantedDevice, kind: DeviceKind): DeviceColumns {
  const { row } = w;
  if (kind === 'netdev') {
    if (!row.host_if_name || !row.mac) {
      throw new CniError(Code.DeviceUnavailable, `device ${row.id} has never been seen on the node`);
    }
    return { hostIfName: row.host_if_name, deviceMac: row.mac };
  }
  if (!isPciId(row.id)) {
    throw new CniError(
      Code.DeviceUnavailable,
      `device ${row.id} of group "${row.grp}" (userspace devices) has no PCI address: it is not a vfio-bound function`,
    );
  }
  if (w.statics.length > 0 || w.routes.length > 0) {
    throw new CniError(
      Code.InvalidConfig,
      `device ${row.id} of group "${row.grp}" is a userspace device (no netdev): its reservation's addresses and routes cannot be given to it`,
    );
  }
  return { userspacePciAddress: row.id };
}
