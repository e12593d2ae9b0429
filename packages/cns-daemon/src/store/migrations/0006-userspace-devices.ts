/**
 * Schema version 6: a DelegatedNIC may be a userspace device (a VF bound to vfio-pci for DPDK): it has no
 * netdev, so no host name, no MAC and no ifindex; the interface records its PCI address instead, which is
 * also how its record says it is one (DEL and CHECK have nothing of it to find in the pod's netns).
 */
export const version = 6;
export const sql = `
ALTER TABLE interfaces ADD COLUMN userspace_pci_address TEXT;
`;
