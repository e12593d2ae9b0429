/**
 * The userspace devices on the node: PCI functions bound to a userspace driver (vfio-pci), which have no
 * netdev, so no link lists them: they are found in sysfs, and an entry's selectors (`drivers: ["vfio-pci"]`,
 * with any others) match them as they match a netdev's function. One matched by entries of two groups is
 * nobody's (logged, left out), as a netdev is.
 */
import type { Logger } from 'pino';
import { USERSPACE_DRIVERS } from './device-kind';
import type { DeviceMatcher } from './selectors';
import type { Sysfs } from './sysfs';

export interface UserspaceFunction {
  /** Its PCI address: its identity. */
  id: string;
  group: string;
}

export function userspaceFunctionsOf(
  sysfs: Sysfs,
  matchers: readonly DeviceMatcher[],
  log: Logger,
): UserspaceFunction[] {
  return sysfs.functions().flatMap((fn) => {
    if (fn.netdev || !fn.driver || !USERSPACE_DRIVERS.has(fn.driver)) return [];
    const facts = { ifName: '', mac: '', linkType: undefined, fn };
    const groups = [...new Set(matchers.filter((m) => m.matches(facts)).map((m) => m.group))];
    if (groups.length > 1) {
      log.error({ device: fn.address, groups }, 'userspace device matched by two groups: left out');
      return [];
    }
    return groups[0] === undefined ? [] : [{ id: fn.address, group: groups[0] }];
  });
}
