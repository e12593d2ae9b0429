/**
 * A delegated device's identity, the key of its row, its reservation and its holder: its PCI address when
 * it has a PCI parent (a VF's MAC is often all zeros, shared with another VF, or new each time its VFs are
 * re-created), else its MAC (a synthetic NIC, a veth in tests), lower case.
 */
const PCI_ADDRESS = /^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$/;

export function deviceIdOf(d: { pciAddress?: string | undefined; mac: string }): string {
  return d.pciAddress ?? d.mac.toLowerCase();
}

/** True when the identity is a PCI address (the device has a PCI parent). */
export function isPciId(id: string): boolean {
  return PCI_ADDRESS.test(id);
}
