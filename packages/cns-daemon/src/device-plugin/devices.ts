/**
 * What one served group looks like to the kubelet, from ferryd's inventory: a device per identity (the
 * inventory's key, `deviceIdOf`: a PCI address, or the MAC of a device with no PCI parent), Healthy while
 * it is on the node or in a pod Ferry put it in, Unhealthy while it is neither (unplugged, or taken by
 * something outside Ferry: moved into another namespace) or while it is a VF whose PF has no carrier. The
 * kubelet stops allocating an Unhealthy device and takes it off the node's allocatable count; a pod
 * already holding it keeps it.
 */
import type { Device } from '@ferry/shared-types/api/devices';
import { type ContainerPreferredAllocationRequest, HEALTHY, type PluginDevice, UNHEALTHY } from './protos';

export interface GroupDevice {
  id: string;
  healthy: boolean;
  /** On the node and held by no attachment: what an allocation should prefer. */
  free: boolean;
}

export function groupDevicesOf(devices: readonly Device[], group: string): GroupDevice[] {
  return devices
    .filter((d) => d.group === group)
    .map((d) => ({
      id: d.id,
      healthy: d.state !== 'missing' && d.pfWithoutCarrier === undefined,
      free: d.state === 'free',
    }))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

export function pluginDevicesOf(devices: readonly GroupDevice[]): PluginDevice[] {
  return devices.map((d) => ({ ID: d.id, health: d.healthy ? HEALTHY : UNHEALTHY }));
}

/**
 * The kubelet's candidates ordered as Ferry would give them: the ones it must include, then those free on
 * the node, then the rest (held by an attachment whose DEL has not come yet: an ADD would have to wait
 * for it), each in ID order; `allocationSize` of them.
 */
export function preferredOf(devices: readonly GroupDevice[], req: ContainerPreferredAllocationRequest): string[] {
  const free = new Set(devices.filter((d) => d.free).map((d) => d.id));
  const must = new Set(req.mustIncludeDeviceIDs);
  const rest = [...new Set(req.availableDeviceIDs)].filter((id) => !must.has(id)).sort();
  return [...must, ...rest.filter((id) => free.has(id)), ...rest.filter((id) => !free.has(id))].slice(
    0,
    Math.max(req.allocationSize, must.size),
  );
}

/** The environment a container gets for its devices of `group`: `FERRY_DEVICES_<GROUP>` = the MACs. */
export function envOf(group: string, ids: readonly string[]): Record<string, string> {
  return { [`FERRY_DEVICES_${group.toUpperCase().replaceAll(/[^A-Z0-9]/g, '_')}`]: ids.join(',') };
}
