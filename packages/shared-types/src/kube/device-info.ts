/**
 * `device-info` as the NPWG Device Information Specification 1.1.0 has it (§3), for a PCI device: what a
 * device plugin writes for each device it allocates (§4.1, the file Multus copies into network-status) and
 * what Ferry's own network-status entries carry (§6), so the two read the same. Ferry's devices are PCI
 * functions with a netdev: no vhost-net, vhost-user, vDPA or memif to describe.
 */
import * as z from 'zod/mini';
import { PciAddressSchema } from '../api/common';

/** The spec version Ferry writes. */
export const DEVICE_INFO_VERSION = '1.1.0';

/** The device plugin's file directory the spec names (§4.1); ferryd's `devicePlugin.deviceInfoDir`. */
export const DEVICE_INFO_DIR = '/var/run/k8s.cni.cncf.io/devinfo/dp';

export const PciDeviceInfoSchema = z.strictObject({
  type: z.literal('pci'),
  version: z.literal(DEVICE_INFO_VERSION),
  pci: z.strictObject({
    'pci-address': PciAddressSchema,
    /** A VF's PF (§3.1.3.4); absent for a PF or a function without one. */
    'pf-pci-address': z.optional(PciAddressSchema),
  }),
});
export type PciDeviceInfo = z.infer<typeof PciDeviceInfoSchema>;

/** The device-info of the PCI function at `address`, with its PF's address when it is a VF. */
export function pciDeviceInfoOf(address: string, pfAddress?: string): PciDeviceInfo {
  return {
    type: 'pci',
    version: DEVICE_INFO_VERSION,
    pci: { 'pci-address': address, ...(pfAddress ? { 'pf-pci-address': pfAddress } : {}) },
  };
}

/**
 * The file name of a device's file (§4.1): `<resourceName>-<deviceID>-device.json`, each `/` of the
 * resource name replaced by `-`.
 */
export function deviceInfoFileName(resourceName: string, deviceId: string): string {
  return `${resourceName.replaceAll('/', '-')}-${deviceId}-device.json`;
}
