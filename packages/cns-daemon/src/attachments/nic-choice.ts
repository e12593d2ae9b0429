/**
 * Which delegated devices one attachment gets (docs/architecture.md "ADD (ferryd up)" and "Delegated
 * devices as resources"), decided inside the allocation's transaction, before anything is stored or built:
 *
 * - an InfraNIC network's attachment: the pod's operator reservations, then the entries of its
 *   `ferry.dev/nics` annotation meant for this attachment (which, when the pod has the annotation, replace
 *   the conflist's `delegatedNICs`), else the conflist's `delegatedNICs`;
 * - a secondary network's (`infraNIC: false`) attachment: one device under CNI_IFNAME, the one the runtime
 *   names (`runtimeConfig.deviceID`), else the annotation's entry for this network, else the conflist's.
 *
 * The annotation is checked first (annotation-checks.ts), then the kubelet's grant is shared out
 * (kubelet-grant.ts), then the devices are taken (free-devices.ts); each must be free for this pod.
 */
import type { AllocateRequest } from '@ferry/shared-types/api/allocations';
import { PciAddressSchema } from '@ferry/shared-types/api/common';
import type { NetworkConfig } from '@ferry/shared-types/config/ferryd';
import { CniError, Code } from '@ferry/shared-types/errors';
import { POD_NICS_ANNOTATION, type PodNics } from '@ferry/shared-types/kube/pod-nics';
import * as z from 'zod/mini';
import { type KubeletAllocation, resourceOf } from '../device-plugin/served';
import type { PciAddresses } from '../devices/pci';
import type { AttachmentStore } from '../store/attachments';
import type { DeviceStore } from '../store/devices';
import type { DeviceRow, InterfaceRow } from '../store/rows';
import { AnnotationChecks, type Asked, checkNames, entryFor, entryOf } from './annotation-checks';
import { checkFree, DeviceLookup, isMac } from './device-lookup';
import { FreeDevices, type WantedDevice, wantedOf } from './free-devices';
import { type Grant, KubeletGrants } from './kubelet-grant';
import { type Asker, askerOf, PodNicRefusal } from './pod-nic-refusal';
import type { Tenancy } from './tenancy';

/** The name the kubelet gives a pod's primary interface: an annotation entry without `network` is its. */
export const PRIMARY_IF_NAME = 'eth0';

export interface NicChoiceDeps {
  devices: DeviceStore;
  attachmentStore: AttachmentStore;
  tenancy: Tenancy;
  /** sysfs, for PCI addresses; absent: nothing can be asked for by PCI address. */
  pci?: PciAddresses;
  /** Whether ferryd has the network (an annotation entry's `network`). */
  hasNetwork(name: string): boolean;
  /** The groups served to the kubelet as resources (none: the device plugin is off). */
  served?: ReadonlySet<string>;
}

const isPciAddress = (s: string) => z.safeParse(PciAddressSchema, s).success;

export class NicChoice {
  readonly #served: ReadonlySet<string>;
  readonly #tenancy: Tenancy;
  readonly #lookup: DeviceLookup;
  readonly #checks: AnnotationChecks;
  readonly #grants: KubeletGrants;
  readonly #free: FreeDevices;

  constructor(deps: NicChoiceDeps) {
    const served = deps.served ?? new Set<string>();
    const { tenancy } = deps;
    const lookup = new DeviceLookup(deps.devices, deps.pci);
    this.#served = served;
    this.#tenancy = tenancy;
    this.#lookup = lookup;
    this.#checks = new AnnotationChecks({
      lookup,
      attachmentStore: deps.attachmentStore,
      tenancy,
      hasNetwork: deps.hasNetwork,
      served,
    });
    this.#grants = new KubeletGrants({ lookup, tenancy, served });
    this.#free = new FreeDevices({ devices: deps.devices, tenancy, served });
  }

  /**
   * The devices attachment `req` gets on `net`, its container's other interfaces being `others`; `nics`
   * is the pod's annotation when it has one, `allocated` what the kubelet allocated to it. Throws
   * PodNicRefusal (or InvalidConfig for a conflist or runtime that asks for what a network cannot do).
   */
  choose(
    req: AllocateRequest,
    net: NetworkConfig,
    others: readonly InterfaceRow[],
    nics: PodNics | undefined,
    allocated?: KubeletAllocation,
  ): WantedDevice[] {
    const who = askerOf(req);
    const asked = nics && who.namespace ? this.#checks.check(who, who.namespace, nics) : undefined;
    const grant = this.#grants.grantOf(who, asked ?? [], allocated);
    if (!net.infraNIC) return [this.#secondary(req, who, asked, others, grant)];
    const wanted = this.#free.reserved(req, who, others);
    const mine = asked?.filter(
      (a) => a.nic.network === req.network || (!a.nic.network && req.ifName === PRIMARY_IF_NAME),
    );
    if (mine) {
      checkNames(req, who, mine, others);
      const [kubelets, own] = partition(mine, (a) => this.#grants.isServed(a));
      wanted.push(...this.#free.fromAnnotation(who, own, wanted, others));
      for (const a of kubelets) {
        const row = grant.byEntry.get(a.index) as DeviceRow;
        checkFree(row, who, `${entryOf(who, a)}: device ${row.id}`, others);
        wanted.push(wantedOf(row, a.nic, a.nic.ifName));
      }
    } else if (req.delegatedNICs && !this.#served.has(req.delegatedNICs.group)) {
      wanted.push(...this.#free.fromConflist(who, req.delegatedNICs, req.delegatedNICs.count));
    }
    if (req.ifName === PRIMARY_IF_NAME) {
      for (const row of grant.rest) {
        checkFree(row, who, `device ${row.id} (${resourceOf(row.grp)}, allocated by the kubelet)`, others);
        wanted.push({ row, statics: [], routes: [], pooled: false });
      }
    }
    return wanted;
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
    grant: Grant,
  ): WantedDevice {
    const entry = asked ? entryFor(req, who, asked) : undefined;
    const attachment = `attachment ${req.containerId}/${req.ifName} of network "${req.network}"`;
    let row: DeviceRow;
    if (req.deviceId !== undefined) {
      row = this.#runtimeDevice(req.deviceId, who, attachment);
      if (this.#served.has(row.grp) && grant.all && !grant.all.has(row.id)) {
        throw new PodNicRefusal(
          'not-allowed',
          `allocate ${attachment} for ${who.pod}: device ${req.deviceId} (runtimeConfig.deviceID) is of ${resourceOf(row.grp)}, and the kubelet did not allocate it to this pod`,
        );
      }
      if (entry && !(entry.row ? entry.row.id === row.id : entry.nic.group === row.grp)) {
        throw new PodNicRefusal(
          'malformed',
          `${who.pod}: annotation ${POD_NICS_ANNOTATION}: [${entry.index}] asks for ${entry.nic.mac ?? entry.nic.pciAddress ?? `group "${entry.nic.group}"`}, but the runtime gives ${attachment} device ${req.deviceId} (runtimeConfig.deviceID)`,
        );
      }
    } else if (entry && this.#grants.isServed(entry)) {
      row = grant.byEntry.get(entry.index) as DeviceRow;
    } else if (entry?.row) {
      row = entry.row;
    } else if (entry?.nic.group !== undefined) {
      row = this.#free.fromAnnotation(who, [entry], [], others)[0]?.row as DeviceRow;
    } else if (req.delegatedNICs && this.#served.has(req.delegatedNICs.group)) {
      row = this.#grants.allocatedFor(req.delegatedNICs.group, who, attachment, grant, others);
    } else if (req.delegatedNICs) {
      if (req.delegatedNICs.count !== 1) {
        throw new CniError(
          Code.InvalidConfig,
          `invalid network config: delegatedNICs.count: ${attachment} is one device (network "${req.network}" has no InfraNIC); ask for 1`,
        );
      }
      row = (this.#free.fromConflist(who, req.delegatedNICs, 1)[0] as WantedDevice).row;
    } else {
      throw new CniError(
        Code.InvalidConfig,
        `allocate ${attachment}: the network has no InfraNIC, so the attachment is a delegated device, and nothing names one (runtimeConfig.deviceID, a ${POD_NICS_ANNOTATION} entry for network "${req.network}", or the conflist's delegatedNICs)`,
      );
    }
    checkFree(row, who, `allocate ${attachment}: device ${row.id}`, others);
    const wanted = entry ? wantedOf(row, entry.nic, req.ifName) : { row, statics: [], routes: [], pooled: true };
    return { ...wanted, ifName: req.ifName, pooled: wanted.statics.length === 0 };
  }

  /**
   * The device the runtime gives (a PCI address, or a device ID of Ferry's device plugin: a MAC, which
   * the runtime has from the kubelet's allocation): in the inventory, of a group the pod's namespace may have.
   */
  #runtimeDevice(deviceId: string, who: Asker, attachment: string): DeviceRow {
    const byMac = isMac(deviceId);
    if (!byMac && !isPciAddress(deviceId)) {
      throw new CniError(
        Code.InvalidConfig,
        `invalid network config: runtimeConfig.deviceID "${deviceId}" of ${attachment}: not a PCI address like 0000:18:02.5 (or a MAC, a device ID of ferry.dev/<group>)`,
      );
    }
    const row = byMac ? this.#lookup.byMac(deviceId) : this.#lookup.byPci(deviceId);
    if (!row) {
      throw new PodNicRefusal(
        'unknown',
        `allocate ${attachment}: no delegatable device ${byMac ? '' : 'at PCI address '}${deviceId} (runtimeConfig.deviceID) on this node`,
      );
    }
    if (!this.#tenancy.mayGive(row.grp, who.namespace)) {
      throw new PodNicRefusal(
        'not-allowed',
        `allocate ${attachment} for ${who.pod}: device ${deviceId} is of group "${row.grp}", which is bound to other namespaces`,
      );
    }
    return row;
  }
}

function partition<T>(items: readonly T[], test: (item: T) => boolean): [T[], T[]] {
  return [items.filter(test), items.filter((i) => !test(i))];
}
