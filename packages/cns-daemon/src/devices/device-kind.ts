/**
 * What kind of device a group holds, as the SR-IOV network device plugin has it: the `drivers` selector
 * picks the VFs bound to `vfio-pci` for DPDK (userspace devices: no netdev, opened by the container through
 * /dev/vfio), any other entry picks netdevs. A group is one kind or the other, from its config alone, so
 * what a pod may ask of it is known before any device is: a group whose entries are of both kinds is
 * refused at start, naming the group and the entries. (uio_pci_generic and igb_uio would need /dev/uio*
 * devices, which Ferry does not hand out: they select no userspace device.)
 */

/** The drivers that make a PCI function a userspace device (an IOMMU group under /dev/vfio). */
export const USERSPACE_DRIVERS: ReadonlySet<string> = new Set(['vfio-pci']);

export type DeviceKind = 'netdev' | 'userspace';

/** One `delegatedDevices` entry, as far as its kind goes. */
export interface KindedEntry {
  group: string;
  drivers?: readonly string[] | undefined;
}

/** An entry's kind: userspace when it selects drivers and each is a userspace one. */
export function kindOfEntry(e: KindedEntry): DeviceKind | 'mixed' {
  if (!e.drivers || e.drivers.length === 0) return 'netdev';
  const userspace = e.drivers.filter((d) => USERSPACE_DRIVERS.has(d)).length;
  return userspace === 0 ? 'netdev' : userspace === e.drivers.length ? 'userspace' : 'mixed';
}

/** Each group's kind (a group no entry names is a netdev group: today's default). */
export class GroupKinds {
  readonly #userspace: ReadonlySet<string>;

  constructor(entries: readonly KindedEntry[]) {
    this.#userspace = new Set(entries.filter((e) => kindOfEntry(e) === 'userspace').map((e) => e.group));
  }

  of(group: string): DeviceKind {
    return this.#userspace.has(group) ? 'userspace' : 'netdev';
  }
}

/** Why the entries cannot be served (a group of both kinds, an entry of both), or undefined. */
export function deviceKindProblem(entries: readonly KindedEntry[]): string | undefined {
  const first = new Map<string, { index: number; kind: DeviceKind }>();
  for (const [i, e] of entries.entries()) {
    const kind = kindOfEntry(e);
    if (kind === 'mixed') {
      return `delegatedDevices[${i}].drivers: ${JSON.stringify(e.drivers)} mixes userspace drivers (${[...USERSPACE_DRIVERS].join(', ')}: no netdev, handed out as /dev/vfio) with netdev drivers; a group holds one kind: put them in two groups`;
    }
    const seen = first.get(e.group);
    if (!seen) {
      first.set(e.group, { index: i, kind });
    } else if (seen.kind !== kind) {
      return `delegatedDevices[${i}]: group "${e.group}" would hold ${kind} devices, but delegatedDevices[${seen.index}] gives it ${seen.kind} devices; a group holds one kind (userspace: drivers ["vfio-pci"]; netdev: any other selector): put them in two groups`;
    }
  }
  return undefined;
}
