/**
 * The PCI functions sysfs shows under `<sysfsRoot>/bus/pci/devices/`, read the way the SR-IOV network
 * device plugin and sriov-cni read them: `vendor` and `device` (hex IDs), the `driver` link's target,
 * `numa_node`, `physfn` (a VF's PF) and the PF's `virtfn<N>` links (the VF's index), the netdev under
 * `net/`, its `type` (the ARPHRD link type) and the `iommu_group` link (what a vfio-bound VF is opened
 * by: /dev/vfio/<group>). The root is configurable (`sysfsRoot`) so tests can point it at a tree of their
 * own. Every read is of the tree as it is now: nothing is cached here.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { basename, join } from 'node:path';

/** A VF's parent: its PF's address, the VF's index among the PF's `virtfn<N>` links, the PF's netdev. */
export interface PhysicalFunction {
  address: string;
  vfIndex: number;
  netdev?: string;
}

export interface PciFunction {
  /** domain:bus:device.function, as sysfs spells it: `0000:3b:02.0`. */
  address: string;
  /** Hex, without `0x`, lower case (`8086`), as the device plugin's `vendors` selector writes it. */
  vendor?: string;
  /** Hex, without `0x`, lower case (`154c`), as the device plugin's `devices` selector writes it. */
  deviceId?: string;
  /** The bound driver's name (`iavf`, `vfio-pci`); none when unbound. */
  driver?: string;
  /** None when sysfs says -1 (no NUMA affinity) or has no `numa_node`. */
  numaNode?: number;
  /** Set for a VF only. */
  pf?: PhysicalFunction;
  /** The netdev bound to the function in the namespace sysfs was mounted in; none for a vfio-bound VF. */
  netdev?: string;
  /** The netdev's link type (`ether`, `infiniband`, ...), from `net/<netdev>/type`. */
  linkType?: string;
  /** The IOMMU group's number as sysfs names it. */
  iommuGroup?: string;
}

/** ARPHRD_* numbers (include/uapi/linux/if_arp.h) as iproute2 and the device plugin's `linkTypes` name them. */
const LINK_TYPES: Record<string, string> = { '1': 'ether', '32': 'infiniband', '772': 'loopback', '65534': 'none' };
const HEX_ID = /^0x([0-9a-f]{4})$/i;
const PCI_ADDRESS = /^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$/;

export class Sysfs {
  readonly #devicesDir: string;

  constructor(sysfsRoot: string) {
    this.#devicesDir = join(sysfsRoot, 'bus', 'pci', 'devices');
  }

  /** Every PCI function, in address order. */
  functions(): PciFunction[] {
    return entries(this.#devicesDir)
      .filter((a) => PCI_ADDRESS.test(a))
      .sort()
      .flatMap((a) => {
        const f = this.function(a);
        return f ? [f] : [];
      });
  }

  /** The function at `address`; none when sysfs has no such device. */
  function(address: string): PciFunction | undefined {
    const dir = join(this.#devicesDir, address);
    if (!PCI_ADDRESS.test(address) || entries(dir).length === 0) return undefined;
    const netdev = this.netdevsAt(address)[0];
    const vendor = hexId(text(join(dir, 'vendor')));
    const deviceId = hexId(text(join(dir, 'device')));
    const driver = linkName(join(dir, 'driver'));
    const numaNode = numa(text(join(dir, 'numa_node')));
    const pf = this.#pfOf(address);
    const linkType = netdev === undefined ? undefined : LINK_TYPES[text(join(dir, 'net', netdev, 'type')) ?? ''];
    const iommuGroup = linkName(join(dir, 'iommu_group'));
    return {
      address,
      ...(vendor ? { vendor } : {}),
      ...(deviceId ? { deviceId } : {}),
      ...(driver ? { driver } : {}),
      ...(numaNode !== undefined ? { numaNode } : {}),
      ...(pf ? { pf } : {}),
      ...(netdev ? { netdev } : {}),
      ...(linkType ? { linkType } : {}),
      ...(iommuGroup ? { iommuGroup } : {}),
    };
  }

  /** The netdevs sysfs lists at `address` (one for a NIC function; none when unbound or vfio-bound). */
  netdevsAt(address: string): string[] {
    return entries(join(this.#devicesDir, address, 'net')).sort();
  }

  #pfOf(address: string): PhysicalFunction | undefined {
    const pfAddress = linkName(join(this.#devicesDir, address, 'physfn'));
    if (!pfAddress) return undefined;
    const pfDir = join(this.#devicesDir, pfAddress);
    const vf = entries(pfDir).find((e) => /^virtfn\d+$/.test(e) && linkName(join(pfDir, e)) === address);
    if (!vf) return undefined;
    const netdev = this.netdevsAt(pfAddress)[0];
    return { address: pfAddress, vfIndex: Number(vf.slice('virtfn'.length)), ...(netdev ? { netdev } : {}) };
  }
}

function hexId(s: string | undefined): string | undefined {
  return s === undefined ? undefined : HEX_ID.exec(s)?.[1]?.toLowerCase();
}

function numa(s: string | undefined): number | undefined {
  if (s === undefined || !/^\d+$/.test(s)) return undefined;
  return Number(s);
}

const isAbsent = (err: unknown) => {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR' || code === 'EINVAL';
};

/** The entries of a directory; none when it is not there (no such device, a function with no netdev). */
function entries(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch (err) {
    if (isAbsent(err)) return [];
    throw err;
  }
}

/** A sysfs attribute, trimmed; none when the file is not there. */
function text(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch (err) {
    if (isAbsent(err)) return undefined;
    throw err;
  }
}

/** The last part of a symlink's target (`driver` → `iavf`); none when there is no such link. */
function linkName(link: string): string | undefined {
  try {
    return basename(readlinkSync(link));
  } catch (err) {
    if (isAbsent(err)) return undefined;
    throw err;
  }
}
