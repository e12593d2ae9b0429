/**
 * The devices an attachment takes from the node itself (not from the kubelet's grant): the pod's operator
 * reservations, the free devices its annotation entries name or ask a group for, a conflist's count of a
 * group. Each must be free for this pod (device-lookup.ts checkFree).
 */
import type { AllocateRequest } from '@ferry/shared-types/api/allocations';
import type { AssignedAddress, PodRoute } from '@ferry/shared-types/api/common';
import type { DelegatedNicsRequest } from '@ferry/shared-types/cni/config';
import { POD_NICS_ANNOTATION, type PodNic } from '@ferry/shared-types/kube/pod-nics';
import { reservationOf } from '../devices/inventory';
import { familyOf } from '../ipam/cidr';
import type { DeviceStore } from '../store/devices';
import type { DeviceRow, InterfaceRow } from '../store/rows';
import type { Asked } from './annotation-checks';
import { checkFree } from './device-lookup';
import { type Asker, PodNicRefusal } from './pod-nic-refusal';
import type { Tenancy } from './tenancy';

/** One device an attachment gets, and what its interface row stores. */
export interface WantedDevice {
  row: DeviceRow;
  /** Its name in the pod; absent: the next free netN. */
  ifName?: string;
  statics: AssignedAddress[];
  routes: PodRoute[];
  /** A secondary network's device without static addresses takes the network's pool addresses. */
  pooled: boolean;
}

export interface FreeDevicesDeps {
  devices: DeviceStore;
  tenancy: Tenancy;
  /** The groups served to the kubelet as resources: never taken from the node's free ones. */
  served: ReadonlySet<string>;
}

export class FreeDevices {
  readonly #deps: FreeDevicesDeps;

  constructor(deps: FreeDevicesDeps) {
    this.#deps = deps;
  }

  /** The attachment's devices from its annotation entries: named ones first, then each group's free ones. */
  fromAnnotation(
    who: Asker,
    mine: readonly Asked[],
    already: readonly WantedDevice[],
    others: readonly InterfaceRow[],
  ): WantedDevice[] {
    const out: WantedDevice[] = [];
    const reserved = new Set(already.map((w) => w.row.id));
    const taken = new Set(reserved);
    const named = mine.filter((a) => a.row);
    for (const a of named) {
      const row = a.row as DeviceRow;
      const field = a.nic.mac ? 'mac' : 'pciAddress';
      const device = `${who.pod}: annotation ${POD_NICS_ANNOTATION}: [${a.index}].${field}: device ${row.id}`;
      if (taken.has(row.id)) {
        const twice = reserved.has(row.id)
          ? 'is also given to the pod by an operator reservation'
          : 'is asked for twice';
        throw new PodNicRefusal('unavailable', `${device} ${twice}`);
      }
      checkFree(row, who, device, others);
      taken.add(row.id);
      out.push(wantedOf(row, a.nic, a.nic.ifName));
    }
    const byGroup = new Map<string, Asked[]>();
    for (const a of mine) {
      if (a.nic.group === undefined) continue;
      byGroup.set(a.nic.group, [...(byGroup.get(a.nic.group) ?? []), a]);
    }
    for (const [group, entries] of byGroup) {
      const free = this.#deps.devices.freeOfGroup(group, entries.length + taken.size).filter((r) => !taken.has(r.id));
      if (free.length < entries.length) {
        throw new PodNicRefusal(
          'unavailable',
          `${who.pod}: annotation ${POD_NICS_ANNOTATION}: asks for ${entries.length} devices of group "${group}": ${free.length} free on this node`,
        );
      }
      for (const [k, a] of entries.entries()) {
        const row = free[k] as DeviceRow;
        taken.add(row.id);
        out.push(wantedOf(row, a.nic, a.nic.ifName));
      }
    }
    return out;
  }

  /** The network-wide ask of a conflist (operator-written): a bound group serves its namespaces only. */
  fromConflist(who: Asker, ask: DelegatedNicsRequest, count: number): WantedDevice[] {
    const { group } = ask;
    if (!this.#deps.tenancy.mayGive(group, who.namespace)) {
      throw new PodNicRefusal(
        'not-allowed',
        `allocate delegated NICs of group "${group}" for ${who.pod}: the group is bound to other namespaces`,
      );
    }
    const free = this.#deps.devices.freeOfGroup(group, count);
    if (free.length < count) {
      throw new PodNicRefusal(
        'unavailable',
        `allocate ${count} delegated NICs of group "${group}": only ${free.length} free on this node`,
      );
    }
    return free.map((row) => ({ row, statics: [], routes: [], pooled: false }));
  }

  /** The pod's operator reservations; those its other attachments already hold stay where they are. */
  reserved(req: AllocateRequest, who: Asker, others: readonly InterfaceRow[]): WantedDevice[] {
    const { namespace, name } = req.pod ?? {};
    if (!namespace || !name) return [];
    const own = new Set(others.map((i) => i.id));
    const out: WantedDevice[] = [];
    for (const row of this.#deps.devices.reservedFor(namespace, name)) {
      // A served group's device is the kubelet's to give (Inventory.reserve refuses such reservations).
      if (this.#deps.served.has(row.grp) || (row.interface_id !== null && own.has(row.interface_id))) continue;
      checkFree(row, who, `device ${row.id} reserved for ${namespace}/${name}`, others);
      const reservation = reservationOf(row);
      out.push({
        row,
        ...(reservation?.ifName ? { ifName: reservation.ifName } : {}),
        statics: reservation?.addresses ?? [],
        routes: reservation?.routes ?? [],
        pooled: false,
      });
    }
    return out;
  }
}

/** The device with the entry's in-pod name, static addresses (with its gateway) and routes. */
export function wantedOf(row: DeviceRow, nic: PodNic, ifName: string | undefined): WantedDevice {
  const gatewayOf = (family: 4 | 6) =>
    nic.gateway !== undefined && familyOf(nic.gateway) === family ? nic.gateway : undefined;
  const statics = (nic.addresses ?? []).map((address): AssignedAddress => {
    const family = familyOf(address.slice(0, address.lastIndexOf('/')));
    const gateway = gatewayOf(family);
    return { family, address, ...(gateway ? { gateway } : {}) };
  });
  const routes = (nic.routes ?? []).map((r): PodRoute => {
    const gw = r.gw ?? gatewayOf(familyOf(r.dst.slice(0, r.dst.lastIndexOf('/'))));
    return { dst: r.dst, ...(gw ? { gw } : {}) };
  });
  return { row, ...(ifName ? { ifName } : {}), statics, routes, pooled: false };
}
