/**
 * The userspace devices on the node: PCI functions bound to a userspace driver (vfio-pci), which have no
 * netdev, so no link lists them: they are found in sysfs, and an entry's selectors (`drivers: ["vfio-pci"]`,
 * with any others) match them as they match a netdev's function. The inventory refuses one that entries
 * of two groups match, as it refuses such a netdev.
 */
import { USERSPACE_DRIVERS } from './device-kind';
import type { DeviceMatcher } from './selectors';
import type { Sysfs } from './sysfs';

export interface UserspaceFunction {
  /** Its PCI address: its identity. */
  id: string;
  /** The groups whose entries match it (one, unless the config overlaps). */
  groups: string[];
}

export function userspaceFunctionsOf(sysfs: Sysfs, matchers: readonly DeviceMatcher[]): UserspaceFunction[] {
  return sysfs.functions().flatMap((fn) => {
    if (fn.netdev || !fn.driver || !USERSPACE_DRIVERS.has(fn.driver)) return [];
    const facts = { ifName: '', mac: '', linkType: undefined, fn };
    const groups = [...new Set(matchers.filter((m) => m.matches(facts)).map((m) => m.group))];
    return groups.length === 0 ? [] : [{ id: fn.address, groups }];
  });
}
