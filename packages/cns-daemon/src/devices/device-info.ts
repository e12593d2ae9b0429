/**
 * A delegated device's `device-info` (NPWG Device Information Specification 1.1.0) from sysfs: its PCI
 * address and, for a VF, its PF's. The device plugin writes it to the file Multus reads; ferryd's own
 * network-status entries carry the same.
 */
import { type PciDeviceInfo, pciDeviceInfoOf } from '@ferry/shared-types/kube/device-info';
import type { Sysfs } from './sysfs';

export function deviceInfoAt(sysfs: Sysfs, address: string): PciDeviceInfo {
  return pciDeviceInfoOf(address, sysfs.function(address)?.pf?.address);
}
