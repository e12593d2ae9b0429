/**
 * Which delegated devices one attachment gets (DESIGN.md "Which pods get which NICs"), decided inside the
 * allocation's transaction, before anything is stored or built:
 *
 * - an InfraNIC network's attachment: the pod's operator reservations, then the entries of its
 *   `ferry.dev/nics` annotation meant for this attachment (which, when the pod has the annotation, replace
 *   the conflist's `delegatedNICs`), else the conflist's `delegatedNICs`;
 * - a secondary network's (`infraNIC: false`) attachment: one device under CNI_IFNAME, the one the runtime
 *   names (`runtimeConfig.deviceID`), else the annotation's entry for this network, else the conflist's.
 *
 * An annotation is a tenant's request (whoever may create a pod may write it), so all of it is checked at
 * every attachment of its pod against what exists and what the namespace may have (tenancy.ts): an unknown
 * network, group or device, a group not bound to the namespace, a static address outside its ranges or
 * held by another pod, an in-pod name already taken, is refused naming the pod, the annotation, the entry
 * and the problem. Then this attachment's devices must be free. Every refusal is a PodNicRefusal, whose
 * reason ferryd counts.
 */
import type { AllocateRequest } from '@ferry/shared-types/api/allocations';
import { type AssignedAddress, PciAddressSchema, type PodRoute } from '@ferry/shared-types/api/common';
import type { DelegatedNicsRequest } from '@ferry/shared-types/cni/config';
import type { NetworkConfig } from '@ferry/shared-types/config/ferryd';
import { CniError, Code } from '@ferry/shared-types/errors';
import { POD_NICS_ANNOTATION, type PodNic, type PodNics } from '@ferry/shared-types/kube/pod-nics';
import * as z from 'zod/mini';
import { reservationOf } from '../devices/inventory';
import type { PciAddresses } from '../devices/pci';
import { canonicalAddress, familyOf } from '../ipam/cidr';
import type { AttachmentStore } from '../store/attachments';
import type { DeviceStore } from '../store/devices';
import type { DeviceRow, InterfaceRow } from '../store/rows';
import type { Tenancy } from './tenancy';

/** The name the kubelet gives a pod's primary interface: an annotation entry without `network` is its. */
export const PRIMARY_IF_NAME = 'eth0';

/** Why a pod does not get what it asked for: the label of ferryd's refusal metric. */
export type RefusalReason = 'malformed' | 'unknown' | 'not-allowed' | 'unavailable';

/** A refused request for delegated NICs (116: the pod may not, or asks for nothing that exists; 106: none free). */
export class PodNicRefusal extends CniError {
  readonly reason: RefusalReason;
  constructor(reason: RefusalReason, message: string) {
    super(reason === 'unavailable' ? Code.DeviceUnavailable : Code.InvalidPodIntent, message);
    this.name = 'PodNicRefusal';
    this.reason = reason;
  }
}

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

export interface NicChoiceDeps {
  devices: DeviceStore;
  attachmentStore: AttachmentStore;
  tenancy: Tenancy;
  /** sysfs, for PCI addresses; absent: nothing can be asked for by PCI address. */
  pci?: PciAddresses;
  /** Whether ferryd has the network (an annotation entry's `network`). */
  hasNetwork(name: string): boolean;
}

/** One entry of the annotation, checked, with the device it names (by mac or pciAddress). */
interface Asked {
  index: number;
  nic: PodNic;
  row?: DeviceRow;
}

/** Who asks, for messages: the pod and (for its annotation) where in it. */
interface Asker {
  namespace: string | undefined;
  name: string | undefined;
  pod: string;
}

const isPciAddress = (s: string) => z.safeParse(PciAddressSchema, s).success;
const normalMac = (mac: string) => mac.toLowerCase().replaceAll('-', ':');

export class NicChoice {
  readonly #deps: NicChoiceDeps;

  constructor(deps: NicChoiceDeps) {
    this.#deps = deps;
  }

  /**
   * The devices attachment `req` gets on `net`, its container's other interfaces being `others`; `nics`
   * is the pod's annotation when it has one. Throws PodNicRefusal (or InvalidConfig for a conflist or
   * runtime that asks for what a network cannot do).
   */
  choose(
    req: AllocateRequest,
    net: NetworkConfig,
    others: readonly InterfaceRow[],
    nics: PodNics | undefined,
  ): WantedDevice[] {
    const who = askerOf(req);
    const asked = nics && who.namespace ? this.#checkAnnotation(who, who.namespace, nics) : undefined;
    if (!net.infraNIC) return [this.#secondary(req, who, asked, others)];
    const wanted = this.#reserved(req, who, others);
    const mine = asked?.filter(
      (a) => a.nic.network === req.network || (!a.nic.network && req.ifName === PRIMARY_IF_NAME),
    );
    if (mine) {
      checkNames(req, who, mine, others);
      wanted.push(...this.#fromAnnotation(who, mine, wanted, others));
    } else if (req.delegatedNICs) wanted.push(...this.#fromConflist(who, req.delegatedNICs, req.delegatedNICs.count));
    return wanted;
  }

  /** Every entry against what exists on this node and what the namespace may have. */
  #checkAnnotation(who: Asker, namespace: string, nics: PodNics): Asked[] {
    const { tenancy } = this.#deps;
    return nics.map((nic, index): Asked => {
      const refuse = (reason: RefusalReason, field: string, problem: string) =>
        new PodNicRefusal(reason, `${who.pod}: annotation ${POD_NICS_ANNOTATION}: [${index}].${field}: ${problem}`);
      if (nic.network !== undefined && !this.#deps.hasNetwork(nic.network)) {
        throw refuse('unknown', 'network', `ferryd has no network "${nic.network}"`);
      }
      this.#checkAddresses(nic, namespace, who, refuse);
      if (nic.group !== undefined) {
        if (!tenancy.knownGroups.has(nic.group)) {
          const open = tenancy.groupsOpenTo(namespace);
          throw refuse(
            'unknown',
            'group',
            `no device group "${nic.group}" on this node (${openGroups(namespace, open)})`,
          );
        }
        if (!tenancy.mayAsk(nic.group, namespace)) {
          throw refuse('not-allowed', 'group', `namespace ${namespace} may not use device group "${nic.group}"`);
        }
        return { index, nic };
      }
      const [field, row] = nic.mac !== undefined ? ['mac', this.#byMac(nic.mac)] : ['pciAddress', this.#byPci(nic)];
      const named = nic.mac ?? nic.pciAddress ?? '';
      if (!row) throw refuse('unknown', field, `no delegatable device ${named} on this node`);
      if (!tenancy.mayAsk(row.grp, namespace)) {
        throw refuse('not-allowed', field, `namespace ${namespace} may not use device ${named}`);
      }
      return { index, nic, row };
    });
  }

  /** Static addresses: only inside the ranges bound to the namespace, never one another pod holds. */
  #checkAddresses(
    nic: PodNic,
    namespace: string,
    who: Asker,
    refuse: (reason: RefusalReason, field: string, problem: string) => PodNicRefusal,
  ): void {
    if (!nic.addresses) return;
    const { tenancy } = this.#deps;
    const ranges = tenancy.rangesOf(namespace);
    if (ranges.length === 0) {
      throw refuse('not-allowed', 'addresses', `namespace ${namespace} may give no static addresses`);
    }
    const held = this.#heldByOthers(who);
    for (const [j, address] of nic.addresses.entries()) {
      if (!tenancy.rangeFor(address, namespace)) {
        throw refuse(
          'not-allowed',
          `addresses[${j}]`,
          `${address} is outside the ranges of namespace ${namespace} (${ranges.join(', ')})`,
        );
      }
      if (held.has(hostOf(address))) {
        throw refuse('unavailable', `addresses[${j}]`, `${address} is in use by another pod`);
      }
    }
  }

  /** The static addresses other pods' interfaces hold (the same pod's other sandbox is the same pod). */
  #heldByOthers(who: Asker): Set<string> {
    const held = new Set<string>();
    for (const r of this.#deps.attachmentStore.staticAddresses()) {
      if (r.pod_namespace === who.namespace && r.pod_name === who.name) continue;
      for (const a of JSON.parse(r.json) as { address: string }[]) held.add(hostOf(a.address));
    }
    return held;
  }

  /** The InfraNIC attachment's devices from its annotation entries: named ones first, then each group's free ones. */
  #fromAnnotation(
    who: Asker,
    mine: readonly Asked[],
    already: readonly WantedDevice[],
    others: readonly InterfaceRow[],
  ): WantedDevice[] {
    const out: WantedDevice[] = [];
    const reserved = new Set(already.map((w) => w.row.mac));
    const taken = new Set(reserved);
    const named = mine.filter((a) => a.row);
    for (const a of named) {
      const row = a.row as DeviceRow;
      const field = a.nic.mac ? 'mac' : 'pciAddress';
      const device = `${who.pod}: annotation ${POD_NICS_ANNOTATION}: [${a.index}].${field}: device ${row.mac}`;
      if (taken.has(row.mac)) {
        const twice = reserved.has(row.mac)
          ? 'is also given to the pod by an operator reservation'
          : 'is asked for twice';
        throw new PodNicRefusal('unavailable', `${device} ${twice}`);
      }
      this.#checkFree(row, who, device, others);
      taken.add(row.mac);
      out.push(wantedOf(row, a.nic, a.nic.ifName));
    }
    const byGroup = new Map<string, Asked[]>();
    for (const a of mine) {
      if (a.nic.group === undefined) continue;
      byGroup.set(a.nic.group, [...(byGroup.get(a.nic.group) ?? []), a]);
    }
    for (const [group, entries] of byGroup) {
      const free = this.#deps.devices.freeOfGroup(group, entries.length + taken.size).filter((r) => !taken.has(r.mac));
      if (free.length < entries.length) {
        throw new PodNicRefusal(
          'unavailable',
          `${who.pod}: annotation ${POD_NICS_ANNOTATION}: asks for ${entries.length} devices of group "${group}": ${free.length} free on this node`,
        );
      }
      for (const [k, a] of entries.entries()) {
        const row = free[k] as DeviceRow;
        taken.add(row.mac);
        out.push(wantedOf(row, a.nic, a.nic.ifName));
      }
    }
    return out;
  }

  /** The network-wide ask of a conflist (operator-written): a bound group serves its namespaces only. */
  #fromConflist(who: Asker, ask: DelegatedNicsRequest, count: number): WantedDevice[] {
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
  #reserved(req: AllocateRequest, who: Asker, others: readonly InterfaceRow[]): WantedDevice[] {
    const { namespace, name } = req.pod ?? {};
    if (!namespace || !name) return [];
    const own = new Set(others.map((i) => i.id));
    const out: WantedDevice[] = [];
    for (const row of this.#deps.devices.reservedFor(namespace, name)) {
      if (row.interface_id !== null && own.has(row.interface_id)) continue;
      this.#checkFree(row, who, `device ${row.mac} reserved for ${namespace}/${name}`, others);
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

  /**
   * A secondary network's one device: the runtime's (deviceID), else the annotation's entry for this
   * network and CNI_IFNAME, else the conflist's. Static addresses come only from the annotation; without
   * them the network's pools address it.
   */
  #secondary(
    req: AllocateRequest,
    who: Asker,
    asked: readonly Asked[] | undefined,
    others: readonly InterfaceRow[],
  ): WantedDevice {
    const entry = asked ? entryFor(req, who, asked) : undefined;
    const attachment = `attachment ${req.containerId}/${req.ifName} of network "${req.network}"`;
    let row: DeviceRow;
    if (req.deviceId !== undefined) {
      row = this.#runtimeDevice(req.deviceId, who, attachment);
      if (entry && !(entry.row ? entry.row.mac === row.mac : entry.nic.group === row.grp)) {
        throw new PodNicRefusal(
          'malformed',
          `${who.pod}: annotation ${POD_NICS_ANNOTATION}: [${entry.index}] asks for ${entry.nic.mac ?? entry.nic.pciAddress ?? `group "${entry.nic.group}"`}, but the runtime gives ${attachment} device ${req.deviceId} (runtimeConfig.deviceID)`,
        );
      }
    } else if (entry?.row) {
      row = entry.row;
    } else if (entry?.nic.group !== undefined) {
      row = this.#fromAnnotation(who, [entry], [], others)[0]?.row as DeviceRow;
    } else if (req.delegatedNICs) {
      if (req.delegatedNICs.count !== 1) {
        throw new CniError(
          Code.InvalidConfig,
          `invalid network config: delegatedNICs.count: ${attachment} is one device (network "${req.network}" has no InfraNIC); ask for 1`,
        );
      }
      row = (this.#fromConflist(who, req.delegatedNICs, 1)[0] as WantedDevice).row;
    } else {
      throw new CniError(
        Code.InvalidConfig,
        `allocate ${attachment}: the network has no InfraNIC, so the attachment is a delegated device, and nothing names one (runtimeConfig.deviceID, a ${POD_NICS_ANNOTATION} entry for network "${req.network}", or the conflist's delegatedNICs)`,
      );
    }
    this.#checkFree(row, who, `allocate ${attachment}: device ${row.mac}`, others);
    const wanted = entry ? wantedOf(row, entry.nic, req.ifName) : { row, statics: [], routes: [], pooled: true };
    return { ...wanted, ifName: req.ifName, pooled: wanted.statics.length === 0 };
  }

  /** The device at the PCI address the runtime gives: in the inventory, of a group the pod's namespace may have. */
  #runtimeDevice(deviceId: string, who: Asker, attachment: string): DeviceRow {
    if (!isPciAddress(deviceId)) {
      throw new CniError(
        Code.InvalidConfig,
        `invalid network config: runtimeConfig.deviceID "${deviceId}" of ${attachment}: not a PCI address like 0000:18:02.5`,
      );
    }
    const row = this.#macAtPci(deviceId);
    if (!row) {
      throw new PodNicRefusal(
        'unknown',
        `allocate ${attachment}: no delegatable device at PCI address ${deviceId} (runtimeConfig.deviceID) on this node`,
      );
    }
    if (!this.#deps.tenancy.mayGive(row.grp, who.namespace)) {
      throw new PodNicRefusal(
        'not-allowed',
        `allocate ${attachment} for ${who.pod}: device ${deviceId} is of group "${row.grp}", which is bound to other namespaces`,
      );
    }
    return row;
  }

  /** A device (`device`: how messages name it) may go to this pod: on the node, held by no one, reserved for no other pod. */
  #checkFree(row: DeviceRow, who: Asker, device: string, others: readonly InterfaceRow[]): void {
    if (row.interface_id !== null) {
      const whose = others.some((i) => i.id === row.interface_id) ? 'another attachment of this pod' : 'another pod';
      throw new PodNicRefusal('unavailable', `${device} is held by ${whose}`);
    }
    if (!row.present) throw new PodNicRefusal('unavailable', `${device} is not on the node`);
    if (row.reserved_pod !== null && (row.reserved_namespace !== who.namespace || row.reserved_pod !== who.name)) {
      throw new PodNicRefusal('unavailable', `${device} is reserved for another pod`);
    }
  }

  #byMac(mac: string): DeviceRow | undefined {
    return this.#deps.devices.get(normalMac(mac));
  }

  #byPci(nic: PodNic): DeviceRow | undefined {
    return nic.pciAddress ? this.#macAtPci(nic.pciAddress) : undefined;
  }

  #macAtPci(pci: string): DeviceRow | undefined {
    const { devices } = this.#deps;
    const mac = this.#deps.pci?.macAt(pci, (name) => devices.byHostIfName(name)?.mac);
    return mac ? devices.get(mac) : undefined;
  }
}

/**
 * The in-pod names an InfraNIC attachment's entries ask for: never its own CNI_IFNAME (the pod's primary
 * interface, which the InfraNIC is), never a name the pod's other attachments already use.
 */
function checkNames(req: AllocateRequest, who: Asker, mine: readonly Asked[], others: readonly InterfaceRow[]): void {
  for (const { index, nic } of mine) {
    if (nic.ifName === undefined) continue;
    const clash =
      nic.ifName === req.ifName
        ? "is the pod's primary interface"
        : others.some((i) => i.if_name === nic.ifName)
          ? 'is already an interface of the pod'
          : undefined;
    if (clash) {
      throw new PodNicRefusal(
        'malformed',
        `${who.pod}: annotation ${POD_NICS_ANNOTATION}: [${index}].ifName: "${nic.ifName}" ${clash}`,
      );
    }
  }
}

function askerOf(req: AllocateRequest): Asker {
  const { namespace, name } = req.pod ?? {};
  const pod = namespace && name ? `pod ${namespace}/${name}` : `container ${req.containerId}`;
  return { namespace, name, pod };
}

/**
 * The annotation's entry for a secondary network's attachment: the one naming this network with this
 * CNI_IFNAME, else its only entry for this network (without an ifName).
 */
function entryFor(req: AllocateRequest, who: Asker, asked: readonly Asked[]): Asked | undefined {
  const forNetwork = asked.filter((a) => a.nic.network === req.network);
  const exact = forNetwork.find((a) => a.nic.ifName === req.ifName);
  if (exact) return exact;
  const unnamed = forNetwork.filter((a) => a.nic.ifName === undefined);
  if (unnamed.length > 1) {
    throw new PodNicRefusal(
      'malformed',
      `${who.pod}: annotation ${POD_NICS_ANNOTATION}: entries ${unnamed.map((a) => `[${a.index}]`).join(', ')} are all for network "${req.network}": give each the ifName of its attachment`,
    );
  }
  return unnamed[0];
}

/** The device with the entry's in-pod name, static addresses (with its gateway) and routes. */
function wantedOf(row: DeviceRow, nic: PodNic, ifName: string | undefined): WantedDevice {
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

function openGroups(namespace: string, open: readonly string[]): string {
  return open.length > 0
    ? `groups namespace ${namespace} may use: ${open.join(', ')}`
    : `namespace ${namespace} may use none`;
}

/** An address without its prefix length, in the kernel's spelling: how two spellings of one address compare. */
function hostOf(address: string): string {
  const slash = address.lastIndexOf('/');
  return canonicalAddress(slash < 0 ? address : address.slice(0, slash));
}
