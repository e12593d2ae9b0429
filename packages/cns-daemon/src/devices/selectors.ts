/**
 * Which `delegatedDevices` entry a device on the node matches: by MAC, by a pattern over its name, or by
 * the SR-IOV network device plugin's selectors, read from sysfs (`vendors`, `devices`, `drivers`,
 * `pfNames` with VF ranges, `rootDevices`, `linkTypes`). As in the device plugin, every selector an entry
 * gives must match, and within one selector any item may. A device without a PCI function in sysfs (a
 * veth, a synthetic NIC) matches no selector, nor does a PF that has VFs.
 */
import { DEVICE_SELECTORS, type DelegatedDeviceConfig } from '@ferry/shared-types/config/ferryd';
import type { PciFunction } from './sysfs';

/** What an entry is matched against: the link as `ip` lists it, and its PCI function where sysfs has one. */
export interface DeviceFacts {
  ifName: string;
  mac: string;
  /** `ip -j link`'s link_type. */
  linkType: string | undefined;
  fn: PciFunction | undefined;
}

export type EntryKind = 'mac' | 'namePattern' | 'selectors';

export function kindOf(entry: DelegatedDeviceConfig): EntryKind | undefined {
  if (entry.mac) return 'mac';
  if (entry.namePattern) return 'namePattern';
  return DEVICE_SELECTORS.some((k) => entry[k] !== undefined) ? 'selectors' : undefined;
}

/** One entry, compiled once (its pattern, its PF names with their VF ranges). */
export class DeviceMatcher {
  readonly #entry: DelegatedDeviceConfig;
  readonly #pattern: RegExp | undefined;
  readonly #pfNames: { name: string; vfs: ((i: number) => boolean) | undefined }[] | undefined;

  constructor(entry: DelegatedDeviceConfig) {
    this.#entry = entry;
    this.#pattern = entry.namePattern ? new RegExp(entry.namePattern) : undefined;
    this.#pfNames = entry.pfNames?.map(parsePfName);
  }

  get group(): string {
    return this.#entry.group;
  }

  get kind(): EntryKind | undefined {
    return kindOf(this.#entry);
  }

  matches(d: DeviceFacts): boolean {
    const e = this.#entry;
    if (e.mac) return e.mac.toLowerCase() === d.mac;
    // Only Ethernet devices can be delegated by name (not tunnels, not loopback).
    if (this.#pattern) return d.linkType === 'ether' && this.#pattern.test(d.ifName);
    const { fn } = d;
    // A PF with VFs carries the node's traffic for them: never a device of its own (as in the device plugin).
    if (!fn || fn.vfCount !== undefined || this.kind !== 'selectors') return false;
    const pfAddress = fn.pf?.address ?? fn.address;
    const pfName = fn.pf ? fn.pf.netdev : fn.netdev;
    return (
      within(e.vendors, fn.vendor, (a, b) => a.toLowerCase() === b) &&
      within(e.devices, fn.deviceId, (a, b) => a.toLowerCase() === b) &&
      within(e.drivers, fn.driver) &&
      within(e.rootDevices, pfAddress) &&
      within(e.linkTypes, fn.linkType) &&
      (this.#pfNames === undefined ||
        this.#pfNames.some(
          (p) => p.name === pfName && (p.vfs === undefined || (fn.pf !== undefined && p.vfs(fn.pf.vfIndex))),
        ))
    );
  }
}

/** No selector given: anything matches; given: the value is one of its items. */
function within(
  items: readonly string[] | undefined,
  value: string | undefined,
  same: (item: string, value: string) => boolean = (a, b) => a === b,
): boolean {
  return items === undefined || (value !== undefined && items.some((i) => same(i, value)));
}

/** `ens1f0#0-3,7` → the name and a test of VF indexes (none after the name: every function of the PF). */
function parsePfName(s: string): { name: string; vfs: ((i: number) => boolean) | undefined } {
  const [name = '', ranges] = s.split('#');
  if (ranges === undefined) return { name, vfs: undefined };
  const spans = ranges.split(',').map((r) => {
    const [from = '', to = from] = r.split('-');
    return [Number(from), Number(to)] as const;
  });
  return { name, vfs: (i) => spans.some(([from, to]) => i >= from && i <= to) };
}
