/**
 * Which network device sits at which PCI address, read from sysfs the way sriov-cni and host-device do:
 * the netdev of PCI function `<addr>` is the one directory under `<root>/bus/pci/devices/<addr>/net/`. The
 * root is configurable (`sysfsRoot`) so tests can point it at a tree of their own (there are no PCI
 * devices here). sysfs shows only the netdevs of the namespace it was mounted in, so a device away in a
 * pod is not listed at its address: the map keeps what the last look saw, which is how an ADD asking for
 * a device a pod holds is told so rather than that the address is empty. A PCI address is a fact of the
 * hardware, read again at every scan; nothing of it is stored. A MAC seen at two addresses (VFs that share
 * one, or all-zero ones) names neither: only the netdev's name, as sysfs lists it, finds their address.
 */
import type { Sysfs } from './sysfs';

export class PciAddresses {
  readonly #sysfs: Sysfs;
  readonly #pciByMac = new Map<string, string>();
  readonly #macByPci = new Map<string, string>();
  readonly #sharedMacs = new Set<string>();
  #pciByIfName = new Map<string, string>();
  /** A VF's PF netdev, by the VF's PCI address (as the last refresh saw it). */
  #pfNetdevByPci = new Map<string, string>();

  constructor(sysfs: Sysfs) {
    this.#sysfs = sysfs;
  }

  /** Looks at every PCI function's netdev again, against the node's links as just listed. */
  refresh(links: readonly { ifname: string; address?: string | undefined }[]): void {
    const byName = new Map(links.map((l) => [l.ifname, l.address]));
    this.#pciByIfName = new Map();
    this.#pfNetdevByPci = new Map();
    for (const { address: pci, pf } of this.#sysfs.functions()) {
      if (pf?.netdev) this.#pfNetdevByPci.set(pci, pf.netdev);
      for (const name of this.#sysfs.netdevsAt(pci)) {
        if (!byName.has(name)) continue;
        this.#pciByIfName.set(name, pci);
        const mac = byName.get(name);
        if (mac) this.#remember(pci, mac);
      }
    }
  }

  /** The PCI address of the device with this MAC, as last seen (none for a MAC seen at two addresses). */
  pciOf(mac: string): string | undefined {
    const m = mac.toLowerCase();
    return this.#sharedMacs.has(m) ? undefined : this.#pciByMac.get(m);
  }

  /**
   * The PCI address of the node's link `ifName` with `mac`: where sysfs listed it at the last refresh, else
   * where its MAC was last seen (sysfs lists a netdev under the name it had when the function was bound,
   * the fake tree of tests under the name it was given, not one ferryd renamed it to since).
   */
  pciOfLink(ifName: string, mac: string): string | undefined {
    return this.#pciByIfName.get(ifName) ?? this.pciOf(mac);
  }

  /** The netdev of the PF of the VF at `pci` (as the last refresh saw it); none for a PF, or a PF without one. */
  pfNetdevAt(pci: string): string | undefined {
    return this.#pfNetdevByPci.get(pci);
  }

  /** The MAC of the device at `pci`: the netdev sysfs lists there now (`macOf`), else as last seen. */
  macAt(pci: string, macOf: (ifName: string) => string | undefined): string | undefined {
    const now = this.#sysfs
      .netdevsAt(pci)
      .map(macOf)
      .find((m) => m !== undefined);
    if (now) this.#remember(pci, now);
    return now ?? this.#macByPci.get(pci);
  }

  #remember(pci: string, mac: string): void {
    const m = mac.toLowerCase();
    const before = this.#pciByMac.get(m);
    if (m === ZERO_MAC || (before !== undefined && before !== pci)) this.#sharedMacs.add(m);
    this.#pciByMac.set(m, pci);
    this.#macByPci.set(pci, m);
  }
}

const ZERO_MAC = '00:00:00:00:00:00';
