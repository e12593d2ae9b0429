/**
 * The DelegatedNIC: a host device (an SR-IOV VF in production) moved into the pod for its exclusive use,
 * and always brought home.
 *
 * ADD moves the device under its host name and renames it inside the pod, so on the common path the
 * node sees no rename (udev and NetworkManager race with quick renames on the host, which is why
 * host-device went through a temporary netns). Only when a name clashes does the device travel under a
 * temporary `frt<mac>` name and get renamed where it lands. A marker on the link (its alias,
 * shared-types/link-marker.ts) names the host device and the attachment, for the daemon-down DEL, which
 * has no state, and for ferryd rebuilding a lost record; ferryd's record stays the source of truth.
 *
 * DEL finds the device by the ifindex recorded after the final move, then by MAC, then by name (only a
 * link that is Ferry's), so a device renamed inside the pod still goes home, with the MAC it came with,
 * no alias and the default group.
 * It is renamed inside the pod and then moved out; if its host name is taken, nothing is moved and the
 * error names the clash (a retried DEL succeeds once the name is free).
 */
import { IpBatch, type IpLink, isNetError, netnsAt, parseLinks, SELF, sameMac } from '@ferry/net';
import type { DelegatedNicPlan } from '@ferry/shared-types/api/allocations';
import type { BuiltNic, InterfaceRecord } from '@ferry/shared-types/api/endpoints';
import { CniError, Code } from '@ferry/shared-types/errors';
import { type AttachmentKey, DELEGATED_GROUP, markerOf, parseMarker } from '@ferry/shared-types/link-marker';
import type { Deps } from '../deps';
import type { Rollback } from '../rollback';

/** True when the link is in Ferry's group (ip prints the group as its number). */
export const inDelegatedGroup = (l: IpLink) => l.group === String(DELEGATED_GROUP);

/** A name that clashes nowhere: `frt` + the MAC's last 12 hex digits (15 bytes). */
export function travelNameOf(mac: string): string {
  return `frt${mac.replaceAll(':', '').toLowerCase().slice(-12)}`;
}

/** The node's own namespace as a path other processes can open: this process's. */
const nodeNetnsPath = () => `/proc/${process.pid}/ns/net`;

/** Where an ADD puts its DelegatedNICs, and one listing of the node for all of them. */
export interface DelegatedTarget {
  netns: string;
  /** CNI_IFNAME of the attachment, for the marker. */
  attachmentIfName: string;
  /** A secondary network's device is its attachment: its marker names the key, for ferryd's adoption. */
  attachment?: AttachmentKey;
  /** Each device has its own MAC, so the others' moves do not make this listing wrong for the next one. */
  nodeLinks: readonly IpLink[];
}

/** Builds one DelegatedNIC: find the device on the node → move it in → name, address and route it there. */
export async function buildDelegatedNic(
  plan: DelegatedNicPlan,
  target: DelegatedTarget,
  undo: Rollback,
  deps: Deps,
): Promise<BuiltNic> {
  const dev = findOnNode(plan, target);
  // Armed before the move, not after: the move is several commands and may stop half-way; its undo is
  // idempotent and finds the device wherever it is.
  const asItWas = { wasUp: dev.flags?.includes('UP') ?? false, alias: dev.ifalias ?? '', group: groupOf(dev) };
  const trip = { mac: plan.mac, hostIfName: plan.hostIfName, netns: target.netns, ...asItWas };
  undo.push(`return device ${plan.mac} home`, () => undoMoveIn(trip, deps));
  const arrivedAs = await moveDeviceIn(dev, plan, target, deps);
  return configureInPod(plan, arrivedAs, target.netns, deps);
}

/**
 * The device under its host name with its MAC, else by its MAC alone (a device away from its name: a
 * refund the scan has not renamed home yet). The name comes first because VFs may share a MAC.
 */
function findOnNode(plan: DelegatedNicPlan, target: DelegatedTarget): IpLink {
  const withMac = target.nodeLinks.filter((l) => sameMac(l.address, plan.mac));
  const dev = withMac.find((l) => l.ifname === plan.hostIfName) ?? withMac[0];
  if (dev) return dev;
  throw new CniError(
    Code.DeviceUnavailable,
    `move device ${plan.mac} (${plan.hostIfName}) into ${target.netns}: it is not on the node`,
  );
}

/**
 * Marks the device (alias, group) and moves it into the pod under its host name, or, when the pod already
 * has a link of that name, under its travel name. Returns the name it arrived with.
 */
async function moveDeviceIn(dev: IpLink, plan: DelegatedNicPlan, target: DelegatedTarget, deps: Deps): Promise<string> {
  const what = `move device ${plan.mac} into ${target.netns}`;
  const move = new IpBatch()
    .setDown(dev.ifname)
    .setAlias(dev.ifname, markerOf(plan.hostIfName, target.attachmentIfName, target.attachment))
    .setGroup(dev.ifname, DELEGATED_GROUP)
    .moveTo(dev.ifname, target.netns);
  try {
    await deps.ip.apply(SELF, move, what);
    return dev.ifname;
  } catch (err) {
    // Only the move (the last line) can clash: the pod has a link with the device's host name.
    if (!isNetError(err, 'exists', move.ops.length - 1)) throw err;
  }
  const travelName = travelNameOf(plan.mac);
  await deps.ip.apply(SELF, new IpBatch().rename(dev.ifname, travelName).moveTo(travelName, target.netns), what);
  return travelName;
}

/** Inside the pod: renamed to the plan's ifName, addressed, up, routed; read back for the record. */
async function configureInPod(plan: DelegatedNicPlan, arrivedAs: string, netns: string, deps: Deps): Promise<BuiltNic> {
  const b = new IpBatch();
  const renames = arrivedAs !== plan.ifName;
  if (renames) b.rename(arrivedAs, plan.ifName);
  for (const a of plan.addresses) b.addAddress(plan.ifName, a.address, { nodad: a.family === 6 });
  b.setUp(plan.ifName);
  for (const r of plan.routes) b.addRoute({ dst: r.dst, dev: plan.ifName, ...(r.gw ? { via: r.gw } : {}) });
  b.showLink(plan.ifName);
  let shown: unknown[];
  try {
    shown = await deps.ip.apply(netnsAt(netns), b, `configure device ${plan.mac} as ${plan.ifName}`);
  } catch (err) {
    // A name taken on the rename's line is CNI_IFNAME; on an address's or a route's it stays a NetError.
    if (renames && isNetError(err, 'exists', 0)) {
      throw new CniError(
        Code.InterfaceExists,
        `name device ${plan.mac} ${plan.ifName} in ${netns}: an interface with that name already exists`,
      );
    }
    throw err;
  }
  const link = (await parseLinks(shown, plan.ifName))[0];
  if (!link?.address) throw new CniError(Code.NetlinkFailure, `configure ${plan.ifName} in ${netns}: link vanished`);
  return { ifName: plan.ifName, mac: link.address, containerIfIndex: link.ifindex };
}

/**
 * Finds the device in the pod: by the ifindex recorded after the final move (a netns never reuses one,
 * and it survives a rename and a MAC change), then by MAC (current or permanent), then by name, but
 * only a link whose marker names this device: a stranger that took the name is never moved.
 */
export function findInPod(
  links: readonly IpLink[],
  rec: { containerIfIndex?: number; mac: string; ifName: string; hostIfName: string },
): IpLink | undefined {
  return (
    (rec.containerIfIndex ? links.find((l) => l.ifindex === rec.containerIfIndex) : undefined) ??
    links.find((l) => sameMac(l.address, rec.mac) || sameMac(l.permaddr, rec.mac)) ??
    links.find(
      (l) =>
        l.ifname === rec.ifName &&
        (parseMarker(l.ifalias)?.hostIfName === rec.hostIfName || (!l.ifalias && inDelegatedGroup(l))),
    )
  );
}

/**
 * DEL of a DelegatedNIC. A device that is not in the pod (netns gone, already home) is done. `podLinks`
 * is one listing of the pod for all of a DEL's devices (undefined: the netns is gone); a device already
 * sent home only costs the next one a detour under its `frt` name.
 */
export async function teardownDelegatedNic(
  rec: InterfaceRecord,
  netns: string,
  podLinks: readonly IpLink[] | undefined,
  deps: Deps,
): Promise<void> {
  const mac = rec.deviceMac ?? rec.mac;
  const hostIfName = rec.hostIfName;
  if (!mac || !hostIfName) {
    deps.log.warn({ ifName: rec.ifName }, 'delegated interface without a device record: nothing to return');
    return;
  }
  const dev = podLinks
    ? findInPod(podLinks, {
        ...(rec.containerIfIndex ? { containerIfIndex: rec.containerIfIndex } : {}),
        mac,
        ifName: rec.ifName,
        hostIfName,
      })
    : undefined;
  if (!dev) {
    deps.log.warn(
      { mac, ifName: rec.ifName, netns },
      'delegated device is not in the pod netns; ferryd will find it when it comes back',
    );
    return;
  }
  await moveDeviceOut(dev, podLinks ?? [], { mac, hostIfName, netns, restore: AS_FOUND_ON_NODE }, deps);
}

/** What a device gets back on the node: its alias and link group. */
export interface LinkMarks {
  alias: string;
  group: number | 'default';
}

/** How ferryd lists free devices: no alias, the default group. */
export const AS_FOUND_ON_NODE: LinkMarks = { alias: '', group: 'default' };

/** Where moveDeviceOut takes a device, and what it restores on it. */
interface MoveOut {
  mac: string;
  hostIfName: string;
  netns: string;
  restore: LinkMarks;
}

function groupOf(l: IpLink): number | 'default' {
  const n = Number(l.group);
  return Number.isInteger(n) && n > 0 ? n : 'default';
}

/**
 * Renames the device to its host name inside the pod (and gives it back the MAC it came with, if the pod
 * changed it), then moves it out. If the node already has a link of that name, the kernel refuses the
 * move: the pod-side name and alias are put back, so the device stays in the pod as it was, and the
 * error names the clash.
 */
export async function moveDeviceOut(
  dev: IpLink,
  podLinks: readonly IpLink[],
  trip: MoveOut,
  deps: Deps,
): Promise<void> {
  const pod = netnsAt(trip.netns);
  const cur = dev.ifname;
  // Inside the pod the host name may belong to another link (its eth0, say): then travel under a name
  // that clashes nowhere and take the host name on the node.
  const podHasName = cur !== trip.hostIfName && podLinks.some((l) => l.ifname === trip.hostIfName);
  const travel = podHasName ? travelNameOf(trip.mac) : trip.hostIfName;
  const b = new IpBatch().setDown(cur);
  if (cur !== travel) b.rename(cur, travel);
  // ferryd's inventory knows the device by this MAC.
  if (!sameMac(dev.address, trip.mac)) b.setMac(travel, trip.mac);
  b.setAlias(travel, trip.restore.alias).setGroup(travel, trip.restore.group).moveTo(travel, nodeNetnsPath());
  try {
    await deps.ip.apply(pod, b, `return device ${trip.mac} to the node`);
  } catch (err) {
    await putBackInPod(dev, travel, trip, deps);
    const holder = isNetError(err, 'exists') ? await deps.ip.getLink(SELF, trip.hostIfName) : undefined;
    if (holder && !sameMac(holder.address, trip.mac)) throw nameTaken(trip, holder);
    throw err;
  }
  if (travel !== trip.hostIfName) {
    const rename = new IpBatch().rename(travel, trip.hostIfName);
    await deps.ip.apply(SELF, rename, `name device ${trip.mac} ${trip.hostIfName}`);
  }
  deps.log.info({ mac: trip.mac, from: cur, hostIfName: trip.hostIfName }, 'delegated device returned to the node');
}

/** After a refused move out: the device keeps the pod-side name, alias, group and state it had (best effort). */
async function putBackInPod(dev: IpLink, travel: string, trip: MoveOut, deps: Deps): Promise<void> {
  const pod = netnsAt(trip.netns);
  const cur = dev.ifname;
  const restore = new IpBatch();
  if (travel !== cur && (await deps.ip.getLink(pod, travel))) restore.rename(travel, cur);
  restore.setAlias(cur, dev.ifalias ?? '').setGroup(cur, groupOf(dev));
  if (dev.flags?.includes('UP')) restore.setUp(cur);
  await deps.ip.apply(pod, restore, `restore device ${trip.mac} in the pod`).catch((err: unknown) => {
    deps.log.warn({ err, mac: trip.mac, ifName: cur }, 'could not put the device back as it was in the pod');
  });
}

/**
 * Rollback of ADD: wherever the device is (pod or node), it ends on the node under the host name ferryd
 * planned (the name it had when ferryd last saw it), with its alias and up/down state as they were.
 */
async function undoMoveIn(
  trip: { mac: string; hostIfName: string; netns: string; wasUp: boolean } & LinkMarks,
  deps: Deps,
): Promise<void> {
  const restore: LinkMarks = { alias: trip.alias, group: trip.group };
  const podLinks = (await deps.ip.linksIfPresent(netnsAt(trip.netns))) ?? [];
  const inPod = podLinks.find((l) => sameMac(l.address, trip.mac));
  if (inPod) await moveDeviceOut(inPod, podLinks, { ...trip, restore }, deps);
  const onNode = (await deps.ip.listLinks(SELF)).find((l) => sameMac(l.address, trip.mac));
  if (!onNode) return;
  const b = new IpBatch();
  if (onNode.ifname !== trip.hostIfName) b.rename(onNode.ifname, trip.hostIfName);
  b.setAlias(trip.hostIfName, trip.alias).setGroup(trip.hostIfName, trip.group);
  if (trip.wasUp) b.setUp(trip.hostIfName);
  await deps.ip.apply(SELF, b, `restore device ${trip.mac} on the node`);
}

function nameTaken(trip: MoveOut, holder: IpLink): CniError {
  return new CniError(
    Code.DeviceNameTaken,
    `return device ${trip.mac} to the node as "${trip.hostIfName}": that name is taken by another interface (MAC ${holder.address ?? 'none'})`,
    'the device stays in the pod; DEL succeeds once the name is free',
  );
}
