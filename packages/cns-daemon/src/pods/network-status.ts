/**
 * A pod's `k8s.v1.cni.cncf.io/network-status` as ferryd would have it: Ferry's entries are a projection of
 * ferryd's records (every committed interface of the attachments made for this pod), and every other
 * writer's entries stay as they are. Pure functions; the status writer does the I/O.
 */
import { isDeepStrictEqual } from 'node:util';
import type { InterfaceRecord } from '@ferry/shared-types/api/endpoints';
import type { PciDeviceInfo } from '@ferry/shared-types/kube/device-info';
import {
  FERRY_ATTACHMENT_KEY,
  type FerryStatusEntry,
  isFerryEntry,
  type NetworkStatusEntry,
  parseNetworkStatus,
} from '@ferry/shared-types/kube/network-status';
import { isPodWithUid, type PodView } from './pod';

/**
 * A delegated device's `device-info`, where it is a PCI device (devices/device-info.ts): by its PCI address
 * where the record has it (a userspace device, which has no MAC), else by its MAC.
 */
export type DeviceInfoOf = (device: { mac?: string; pciAddress?: string }) => PciDeviceInfo | undefined;

/** The interface name the kubelet gives a pod's cluster-wide default network (CNI_IFNAME). */
const DEFAULT_NETWORK_IF_NAME = 'eth0';

/**
 * Ferry's entries for `pod`, from its records: committed interfaces only, of attachments made for this
 * pod (by namespace and name, and by UID where the runtime gave one: an older pod of the same name that
 * is not yet deleted is not this one), the newest attachment per (network, CNI_IFNAME) when a sandbox
 * was made again before the old one's DEL. Sorted: the default network's interface first. A delegated
 * device that is a PCI function carries its `device-info`, as the device plugin's file has it.
 */
export function ferryEntriesOf(
  records: readonly InterfaceRecord[],
  pod: PodView,
  deviceInfoOf: DeviceInfoOf = () => undefined,
): FerryStatusEntry[] {
  const slotOf = (r: InterfaceRecord) => `${r.network}/${r.attachmentIfName}`;
  const mine = records.filter(
    (r) =>
      r.state === 'committed' &&
      r.pod.namespace === pod.namespace &&
      r.pod.name === pod.name &&
      isPodWithUid(pod, r.pod.uid),
  );
  const newest = new Map<string, InterfaceRecord>();
  for (const r of mine) {
    const seen = newest.get(slotOf(r));
    if (!seen || seen.createdAt < r.createdAt) newest.set(slotOf(r), r);
  }
  return mine
    .filter((r) => newest.get(slotOf(r))?.containerId === r.containerId)
    .map((r) => entryOf(r, deviceInfoOf))
    .sort(
      (a, b) =>
        Number(b.default) - Number(a.default) ||
        compare(a.name, b.name) ||
        compare(a[FERRY_ATTACHMENT_KEY].ifName, b[FERRY_ATTACHMENT_KEY].ifName) ||
        compare(a.interface, b.interface),
    );
}

function entryOf(r: InterfaceRecord, deviceInfoOf: DeviceInfoOf): FerryStatusEntry {
  const device = {
    ...(r.deviceMac ? { mac: r.deviceMac } : {}),
    ...(r.pciAddress ? { pciAddress: r.pciAddress } : {}),
  };
  const deviceInfo = device.mac || device.pciAddress ? deviceInfoOf(device) : undefined;
  return {
    name: r.network,
    interface: r.ifName,
    // Without the prefix length, as Multus writes them (and its readers parse them).
    ips: r.addresses.map((a) => a.address.slice(0, a.address.indexOf('/'))),
    ...(r.mac ? { mac: r.mac } : {}),
    default: r.nicType === 'InfraNIC' && r.ifName === DEFAULT_NETWORK_IF_NAME && r.attachmentIfName === r.ifName,
    ...(deviceInfo ? { 'device-info': deviceInfo } : {}),
    [FERRY_ATTACHMENT_KEY]: { network: r.network, containerId: r.containerId, ifName: r.attachmentIfName },
  };
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** What to write: the annotation's new text, or null to remove it (nothing is left in it). */
export interface StatusChange {
  value: string | null;
  /** The old text could not be read as a network-status list (it is replaced; this says why). */
  unreadable?: string;
}

/**
 * `current` (the annotation's text, undefined when the pod has none) with Ferry's entries replaced by
 * `ours`, placed first; undefined when that is what it already says.
 */
export function withFerryEntries(
  current: string | undefined,
  ours: readonly FerryStatusEntry[],
): StatusChange | undefined {
  let others: NetworkStatusEntry[] = [];
  let before: NetworkStatusEntry[] = [];
  let unreadable: string | undefined;
  if (current !== undefined) {
    const r = parseNetworkStatus(current);
    if ('entries' in r) {
      before = r.entries;
      others = r.entries.filter((e) => !isFerryEntry(e));
    } else unreadable = r.problem;
  }
  const after: NetworkStatusEntry[] = [...ours, ...others];
  if (unreadable === undefined && isDeepStrictEqual(before, after)) return undefined;
  const why = unreadable !== undefined ? { unreadable } : {};
  if (after.length === 0) return current === undefined ? undefined : { value: null, ...why };
  return { value: JSON.stringify(after), ...why };
}
