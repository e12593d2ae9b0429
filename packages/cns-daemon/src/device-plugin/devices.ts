/**
 * What one served group looks like to the kubelet, from ferryd's inventory: a device per identity (the
 * inventory's key, `deviceIdOf`: a PCI address, or the MAC of a device with no PCI parent, a veth in
 * tests), Healthy while it is on the node or in a pod Ferry put it in, Unhealthy while it is neither
 * (unplugged, or taken by something outside Ferry: moved into another namespace) or while it is a VF whose
 * PF has no carrier. The kubelet stops allocating an Unhealthy device and takes it off the node's
 * allocatable count; a pod already holding it keeps it. A PCI device carries its NUMA node (sysfs
 * `numa_node`) as its TopologyInfo, so the kubelet's Topology Manager can align it with the pod's CPUs; -1
 * (no affinity) is no topology.
 */
import type { Device } from '@ferry/shared-types/api/devices';
import { USERSPACE_DRIVERS } from '../devices/device-kind';
import type { PciFunction } from '../devices/sysfs';
import { type ContainerPreferredAllocationRequest, HEALTHY, type PluginDevice, UNHEALTHY } from './protos';

export interface GroupDevice {
  /** The device plugin's ID: the device's identity (devices/identity.ts: the PCI address, else the MAC). */
  id: string;
  /** As last seen (none: a function without a netdev). */
  mac?: string;
  healthy: boolean;
  /** On the node and held by no attachment: what an allocation should prefer. */
  free: boolean;
  pciAddress?: string;
  /** A VF's PF. */
  pfAddress?: string;
  numaNode?: number;
  /** A userspace device's IOMMU group (bound to vfio-pci): the container opens /dev/vfio/<group>. */
  vfioGroup?: string;
}

/** The PCI function at an address as sysfs shows it now (devices/sysfs.ts). */
export type PciFunctionOf = (address: string) => PciFunction | undefined;

export function groupDevicesOf(devices: readonly Device[], group: string, pciFunctionOf: PciFunctionOf): GroupDevice[] {
  return devices
    .filter((d) => d.group === group)
    .map((d): GroupDevice => {
      const base = {
        id: d.id,
        ...(d.mac ? { mac: d.mac } : {}),
        healthy: d.state !== 'missing' && d.pfWithoutCarrier === undefined,
        free: d.state === 'free',
      };
      if (!d.pciAddress) return base;
      const f = pciFunctionOf(d.pciAddress);
      return {
        ...base,
        pciAddress: d.pciAddress,
        ...(f?.pf ? { pfAddress: f.pf.address } : {}),
        ...(f?.numaNode !== undefined ? { numaNode: f.numaNode } : {}),
        ...(f?.iommuGroup && f.driver && USERSPACE_DRIVERS.has(f.driver) ? { vfioGroup: f.iommuGroup } : {}),
      };
    })
    .sort((a, b) => compare(a.id, b.id));
}

export function pluginDevicesOf(devices: readonly GroupDevice[]): PluginDevice[] {
  return devices.map((d) => ({
    ID: d.id,
    health: d.healthy ? HEALTHY : UNHEALTHY,
    topology: d.numaNode === undefined ? null : { nodes: [{ ID: d.numaNode }] },
  }));
}

/**
 * The kubelet's candidates as Ferry would give them: the ones it must include, then `allocationSize` in
 * all, kept on one NUMA node (and with `preferSamePf`, one PF) where one holds enough, the one of the
 * devices that must be included first; among those, devices free on the node before those an attachment
 * still holds (its DEL has not come: an ADD would have to wait for it), each in ID order. Alignment
 * comes before freeness: it lasts the pod's life, the wait only until that DEL. Where no node holds
 * enough, the fullest nodes are taken first, so the pod spans as few as it can.
 */
export function preferredOf(
  devices: readonly GroupDevice[],
  req: ContainerPreferredAllocationRequest,
  { preferSamePf = false } = {},
): string[] {
  const byId = new Map(devices.map((d) => [d.id, d]));
  const must = [...new Set(req.mustIncludeDeviceIDs)];
  const mustSet = new Set(must);
  const need = req.allocationSize - must.length;
  if (need <= 0) return must;
  const free = (id: string) => byId.get(id)?.free === true;
  const rest = [...new Set(req.availableDeviceIDs)].filter((id) => !mustSet.has(id)).sort(compare);
  const ranked = [...rest.filter(free), ...rest.filter((id) => !free(id))];
  const numa = (id: string) => String(byId.get(id)?.numaNode ?? 'none');
  const pf = (id: string) => `${numa(id)}/${byId.get(id)?.pfAddress ?? id}`;
  const keys = preferSamePf ? [pf, numa] : [numa];
  for (const key of keys) {
    const fit = alignedOf(ranked, need, key, must.map(key));
    if (fit) return [...must, ...fit];
  }
  return [...must, ...spreadOf(ranked, numa).slice(0, need)];
}

/**
 * `need` candidates sharing one `key`, from the first bucket that holds enough: the bucket of the
 * devices that must be included when they share one, then the bucket whose first `need` hold the most
 * free devices (the candidates are ranked free first), then the first in rank.
 */
function alignedOf(
  ranked: readonly string[],
  need: number,
  key: (id: string) => string,
  mustKeys: readonly string[],
): string[] | undefined {
  const buckets = bucketsOf(ranked, key).filter((b) => b.ids.length >= need);
  const anchor = new Set(mustKeys).size === 1 ? mustKeys[0] : undefined;
  const score = (b: Bucket) => b.ids.slice(0, need).reduce((n, id) => n + ranked.length - ranked.indexOf(id), 0);
  const best = buckets.find((b) => b.key === anchor) ?? buckets.sort((a, b) => score(b) - score(a))[0];
  return best?.ids.slice(0, need);
}

/** The candidates bucket by bucket, the biggest first (each keeps its rank order). */
function spreadOf(ranked: readonly string[], key: (id: string) => string): string[] {
  return bucketsOf(ranked, key)
    .sort((a, b) => b.ids.length - a.ids.length)
    .flatMap((b) => b.ids);
}

interface Bucket {
  key: string;
  ids: string[];
}

function bucketsOf(ranked: readonly string[], key: (id: string) => string): Bucket[] {
  const buckets = new Map<string, string[]>();
  for (const id of ranked) buckets.set(key(id), [...(buckets.get(key(id)) ?? []), id]);
  return [...buckets].map(([k, ids]) => ({ key: k, ids }));
}

/**
 * The environment a container gets for its devices of `group`: `FERRY_DEVICES_<GROUP>` = their MACs
 * (Ferry's own, kept as it was), and for those that are PCI devices the convention of the SR-IOV device
 * plugin and its readers (app-netutil, network-resources-injector): `PCIDEVICE_<RESOURCE>` = their PCI
 * addresses, the resource name upper-cased with `.` and `/` as `_` (ferry.dev/sriov: PCIDEVICE_FERRY_DEV_SRIOV).
 */
export function envOf(group: string, resource: string, devices: readonly GroupDevice[]): Record<string, string> {
  const pci = devices.flatMap((d) => (d.pciAddress ? [d.pciAddress] : []));
  return {
    [`FERRY_DEVICES_${group.toUpperCase().replaceAll(/[^A-Z0-9]/g, '_')}`]: devices
      .flatMap((d) => d.mac ?? [])
      .join(','),
    ...(pci.length > 0 ? { [`PCIDEVICE_${resource.toUpperCase().replaceAll(/[./]/g, '_')}`]: pci.join(',') } : {}),
  };
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
