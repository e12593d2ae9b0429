/**
 * The kubelet's grant: a group ferryd serves to the kubelet as a resource (`ferry.dev/<group>`,
 * device-plugin/) is the kubelet's to give, so its devices go only to the pod the kubelet allocated them
 * to (from the kubelet's pod-resources API, or the runtime's deviceID), never from the free pool, a
 * reservation or a conflist's count; a pod with no allocation gets none of them. The annotation places
 * them (`network`) and names and addresses them; the ones it does not mention go to the pod's primary
 * attachment.
 */
import { type KubeletAllocation, resourceOf } from '../device-plugin/served';
import type { DeviceRow, InterfaceRow } from '../store/rows';
import { type Asked, entryOf } from './annotation-checks';
import type { DeviceLookup } from './device-lookup';
import { type Asker, PodNicRefusal } from './pod-nic-refusal';
import type { Tenancy } from './tenancy';

/** Who gets the pod's allocated devices: annotation entries (by index), and the rest (its primary attachment). */
export interface Grant {
  byEntry: ReadonlyMap<number, DeviceRow>;
  rest: readonly DeviceRow[];
  /** Every allocated device's MAC; undefined when the kubelet was not asked (the device plugin is off, no pod). */
  all: ReadonlySet<string> | undefined;
}

export interface KubeletGrantsDeps {
  lookup: DeviceLookup;
  tenancy: Tenancy;
  /** The groups served to the kubelet as resources. */
  served: ReadonlySet<string>;
}

export class KubeletGrants {
  readonly #deps: KubeletGrantsDeps;

  constructor(deps: KubeletGrantsDeps) {
    this.#deps = deps;
  }

  /** True when the entry's device is a served group's: the kubelet's allocation gives it. */
  isServed(a: Asked): boolean {
    const group = a.row?.grp ?? a.nic.group;
    return group !== undefined && this.#deps.served.has(group);
  }

  /**
   * The pod's allocated devices of served groups, each to an annotation entry (those naming a device
   * first, then those naming a group, in order) or to the rest. The same for every attachment of the
   * pod, so each takes its own share. An entry of a served group with no allocated device left, or
   * naming a device the kubelet gave to someone else, is refused.
   */
  grantOf(who: Asker, asked: readonly Asked[], allocated: KubeletAllocation | undefined): Grant {
    const rows = this.#allocatedRows(who, allocated);
    const served = asked.filter((a) => this.isServed(a));
    const byEntry = new Map<number, DeviceRow>();
    const claimed = new Set<string>();
    for (const a of served) {
      if (!a.row) continue;
      const resource = resourceOf(a.row.grp);
      if (!rows.has(a.row.id)) {
        throw new PodNicRefusal(
          'not-allowed',
          `${entryOf(who, a)}: device ${a.row.id} is of ${resource}, which the kubelet allocates, and the kubelet did not allocate it to this pod`,
        );
      }
      if (claimed.has(a.row.id))
        throw new PodNicRefusal('unavailable', `${entryOf(who, a)}: device ${a.row.id} is asked for twice`);
      claimed.add(a.row.id);
      byEntry.set(a.index, a.row);
    }
    for (const a of served) {
      if (a.row) continue;
      const group = a.nic.group as string;
      const row = [...rows.values()].find((r) => r.grp === group && !claimed.has(r.id));
      if (!row) {
        const n = [...rows.values()].filter((r) => r.grp === group).length;
        throw new PodNicRefusal(
          'unavailable',
          `${entryOf(who, a)}: group "${group}" is the resource ${resourceOf(group)}, which the kubelet allocates: it allocated this pod ${n}, fewer than the annotation asks for (ask with resources.limits: {${resourceOf(group)}: N})`,
        );
      }
      claimed.add(row.id);
      byEntry.set(a.index, row);
    }
    return {
      byEntry,
      rest: [...rows.values()].filter((r) => !claimed.has(r.id)),
      all: allocated ? new Set(rows.keys()) : undefined,
    };
  }

  /** A secondary attachment's device of a served group from the conflist: one the kubelet allocated to the pod. */
  allocatedFor(
    group: string,
    who: Asker,
    attachment: string,
    grant: Grant,
    others: readonly InterfaceRow[],
  ): DeviceRow {
    const held = new Set(others.map((i) => i.id));
    const row = grant.rest.find((r) => r.grp === group && (r.interface_id === null || !held.has(r.interface_id)));
    if (!row) {
      throw new PodNicRefusal(
        'unavailable',
        `allocate ${attachment} for ${who.pod}: group "${group}" is the resource ${resourceOf(group)}, and the kubelet allocated the pod none (left) (ask with resources.limits: {${resourceOf(group)}: 1})`,
      );
    }
    return row;
  }

  /** The allocation's devices of served groups, by identity, each checked: in the inventory, of a group the namespace may have. */
  #allocatedRows(who: Asker, allocated: KubeletAllocation | undefined): Map<string, DeviceRow> {
    const rows = new Map<string, DeviceRow>();
    for (const [group, ids] of allocated ?? []) {
      if (!this.#deps.served.has(group)) continue;
      for (const id of [...ids].sort()) {
        const row = this.#deps.lookup.byId(id);
        if (!row || row.grp !== group) {
          throw new PodNicRefusal(
            'unknown',
            `${who.pod}: the kubelet allocated ${resourceOf(group)} device ${id}, which is not a device of group "${group}" in ferryd's inventory`,
          );
        }
        if (!this.#deps.tenancy.mayGive(group, who.namespace)) {
          throw new PodNicRefusal(
            'not-allowed',
            `${who.pod}: the kubelet allocated it ${resourceOf(group)}, but the group is bound to other namespaces`,
          );
        }
        rows.set(row.id, row);
      }
    }
    return rows;
  }
}
