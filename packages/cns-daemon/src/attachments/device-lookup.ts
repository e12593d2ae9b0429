/**
 * The node's delegatable devices as a choice finds them: by MAC (any spelling), by PCI address (sysfs),
 * and whether one may go to a pod now.
 */
import type { PciAddresses } from '../devices/pci';
import type { DeviceStore } from '../store/devices';
import type { DeviceRow, InterfaceRow } from '../store/rows';
import { type Asker, PodNicRefusal } from './pod-nic-refusal';

export const isMac = (s: string) => /^([0-9a-f]{2}[:-]){5}[0-9a-f]{2}$/i.test(s);
const normalMac = (mac: string) => mac.toLowerCase().replaceAll('-', ':');

export class DeviceLookup {
  readonly devices: DeviceStore;
  readonly #pci: PciAddresses | undefined;

  /** `pci`: sysfs, for PCI addresses; absent: nothing can be found by PCI address. */
  constructor(devices: DeviceStore, pci?: PciAddresses) {
    this.devices = devices;
    this.#pci = pci;
  }

  /** The device with this MAC, or last seen with it; none when none or two (VFs sharing a MAC) are. */
  byMac(mac: string): DeviceRow | undefined {
    const m = normalMac(mac);
    const rows = this.devices.byMac(m);
    return rows.length === 1 ? rows[0] : rows.length === 0 ? this.devices.get(m) : undefined;
  }

  /** The device with this identity (the device plugin's device ID). */
  byId(id: string): DeviceRow | undefined {
    return this.devices.get(id);
  }

  /** The device at this PCI address: keyed by it, else (a row still keyed by MAC) the netdev sysfs shows there. */
  byPci(pci: string): DeviceRow | undefined {
    const keyed = this.devices.get(pci);
    if (keyed) return keyed;
    const mac = this.#pci?.macAt(pci, (name) => this.devices.byHostIfName(name)?.mac ?? undefined);
    return mac ? this.byMac(mac) : undefined;
  }
}

/** A device (`device`: how messages name it) may go to this pod: on the node, held by no one, reserved for no other pod. */
export function checkFree(row: DeviceRow, who: Asker, device: string, others: readonly InterfaceRow[]): void {
  if (row.interface_id !== null) {
    const whose = others.some((i) => i.id === row.interface_id) ? 'another attachment of this pod' : 'another pod';
    throw new PodNicRefusal('unavailable', `${device} is held by ${whose}`);
  }
  if (!row.present) throw new PodNicRefusal('unavailable', `${device} is not on the node`);
  if (row.reserved_pod !== null && (row.reserved_namespace !== who.namespace || row.reserved_pod !== who.name)) {
    throw new PodNicRefusal('unavailable', `${device} is reserved for another pod`);
  }
}
