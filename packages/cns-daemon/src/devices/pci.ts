/**
 * Which network device sits at which PCI address, read from sysfs the way sriov-cni and host-device do:
 * the netdev of PCI function `<addr>` is the one directory under `<root>/bus/pci/devices/<addr>/net/`. The
 * root is configurable (`sysfsRoot`) so tests can point it at a tree of their own (there are no PCI
 * devices here). sysfs shows only the netdevs of the namespace it was mounted in, so a device away in a
 * pod is not listed at its address: the map keeps what the last look saw, which is how an ADD asking for
 * a device a pod holds is told so rather than that the address is empty. A PCI address is a fact of the
 * hardware, read again at every scan; nothing of it is stored.
 */
import type { Sysfs } from './sysfs';

export class PciAddresses {
  readonly #sysfs: Sysfs;
  readonly #pciByMac = new Map<string, string>();
  readonly #macByPci = new Map<string, string>();
  /** A VF's PF netdev, by the VF's PCI address (as the last refresh saw it). */
  readonly #pfNetdevByPci = new Map<string, string>();

  constructor(sysfs: Sysfs) {
    this.#sysfs = sysfs;
  }

  /** Looks at every PCI function's netdev again; `macOf` gives the MAC of a netdev on the node by name. */
  refresh(macOf: (ifName: string) => string | undefined): void {
    this.#pfNetdevByPci.clear();
    for (const { address: pci, pf } of this.#sysfs.functions()) {
      if (pf?.netdev) this.#pfNetdevByPci.set(pci, pf.netdev);
      const mac = this.#sysfs
        .netdevsAt(pci)
        .map(macOf)
        .find((m) => m !== undefined);
      if (mac) this.#remember(pci, mac);
    }
  }

  /** The PCI address of the device with this MAC, as last seen. */
  pciOf(mac: string): string | undefined {
    return this.#pciByMac.get(mac.toLowerCase());
  }

  /** The netdev of the PF of the device with this MAC, when it is a VF whose PF has one (last refresh). */
  pfNetdevOf(mac: string): string | undefined {
    const pci = this.pciOf(mac);
    return pci === undefined ? undefined : this.#pfNetdevByPci.get(pci);
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
    this.#pciByMac.set(m, pci);
    this.#macByPci.set(pci, m);
  }
}
