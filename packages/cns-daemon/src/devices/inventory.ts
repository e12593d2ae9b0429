/**
 * The delegated-NIC inventory: which host devices may be handed to pods (config: by MAC, or by a name
 * pattern), where each one is, and bringing them home. Devices are keyed by MAC because their names
 * change on the way into and out of pods.
 *
 * A scan lists the node's links and, per device:
 * - records whether it is on the node (or in the pod that holds it);
 * - finds a device on the node that a committed pod still holds: its pod's netns died without a DEL
 *   and the kernel handed the device back (under its pod-side name), so the device is freed;
 * - renames a free device that sits on the node under another name (a refund, or a daemon-down DEL that
 *   had to use a temporary name) back to its recorded name.
 * Devices of attachments still being built (allocated, not committed) are left alone: the shim is
 * moving them. So is an attachment committed after the links were listed: the listing predates its
 * move into the pod.
 */
import { type Ip, IpBatch, type IpLink, type LinkEvent, SELF } from '@ferry/net';
import type { Device, ReservationRequest } from '@ferry/shared-types/api/devices';
import { ReservationRequestSchema } from '@ferry/shared-types/api/devices';
import { CniError, Code } from '@ferry/shared-types/errors';
import type { Logger } from 'pino';
import type { FerrydConfig } from '../config';
import { StartupError } from '../errors';
import type { Db } from '../store/db';
import type { DeviceStore, DeviceWithAssignment } from '../store/devices';
import { parseRow } from '../store/rows';
import { deviceIdOf, isPciId } from './identity';
import type { PciAddresses } from './pci';
import { DeviceMatcher } from './selectors';
import type { Sysfs } from './sysfs';
import { userspaceFunctionsOf } from './userspace-functions';

export interface InventoryDeps {
  db: Db;
  devices: DeviceStore;
  ip: Ip;
  config: FerrydConfig['delegatedDevices'];
  log: Logger;
  now: () => number;
  /** How long a device found by a pattern or selector may be off the node before it leaves the inventory. */
  goneGraceSec: number;
  /** Told each scan's listing, to read the devices' PCI addresses again. */
  pci?: PciAddresses;
  /** What the selectors read (absent: no device matches a selector). */
  sysfs?: Sysfs;
  /** The groups served to the kubelet (its allocation gives their devices, never a reservation). */
  served?: ReadonlySet<string>;
}

/** A link on the node as the scan sees it: its identity, MAC and PCI address (where sysfs shows one). */
interface NodeDevice {
  id: string;
  mac: string;
  link: IpLink;
  /** The config entries that match it. */
  matched: DeviceMatcher[];
  pciAddress?: string;
}

export interface ScanResult {
  refunded: number;
  renamed: number;
}

const normalMac = (mac: string) => mac.toLowerCase();
const ZERO_MAC = '00:00:00:00:00:00';
const ETHER_MAC = /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/i;

export class Inventory {
  readonly #deps: InventoryDeps;
  readonly #matchers: DeviceMatcher[];
  /** The groups whose devices are found on the node (by pattern or selectors), not named by MAC. */
  readonly #discoveredGroups: ReadonlySet<string>;
  #isFirstScan = true;
  #updated: () => void = () => undefined;
  /** The devices whose PF has no carrier: identity → the PF's netdev. */
  #withoutCarrier: ReadonlyMap<string, string> = new Map();
  /** Each PF netdev's devices (identities), as the last scan found them. */
  #devicesOfPf: ReadonlyMap<string, readonly string[]> = new Map();
  /** The scan in progress (or the last one): scans run one at a time (see scan()). */
  #scanning: Promise<unknown> = Promise.resolve();

  constructor(deps: InventoryDeps) {
    this.#deps = deps;
    this.#matchers = deps.config.map((c) => new DeviceMatcher(c));
    this.#discoveredGroups = new Set(this.#matchers.filter((m) => m.kind !== 'mac').map((m) => m.group));
  }

  /** True when there is anything to manage (no device config and no rows: nothing to scan). */
  get isEnabled(): boolean {
    return this.#deps.config.length > 0 || this.#deps.devices.all().length > 0;
  }

  /**
   * `listener` is called after every scan and every link event applied (the device plugin sends what
   * changed to the kubelet).
   */
  onUpdated(listener: () => void): void {
    this.#updated = listener;
  }

  /**
   * One scan, after the one in progress: the reconcile pass and link events both ask for scans, and an
   * older listing written after a newer one would undo what the newer one saw (a device gone, back healthy).
   */
  async scan(): Promise<ScanResult> {
    const run = this.#scanning.then(() => this.#scan());
    this.#scanning = run.catch(() => undefined);
    const result = await run;
    this.#updated();
    return result;
  }

  /**
   * Applies what a link event says at once, without listing the links (a scan spawns `ip`, which takes
   * hundreds of ms on a loaded node): a device's link on the node or gone from it, a PF's carrier. The
   * device is identified as the scan does (its PCI address where sysfs listed its netdev, else its MAC).
   * The scan that follows the event (LinkHealth asks for one) settles the rest and corrects this if it was
   * stale. The rule for presence is the scan's: a device a pod holds is accounted for.
   */
  applyLinkEvent(link: LinkEvent): void {
    const { devices, now } = this.#deps;
    const vfs = this.#devicesOfPf.get(link.ifname) ?? [];
    if (vfs.length > 0) {
      const next = new Map(this.#withoutCarrier);
      for (const id of vfs) {
        if (link.kind === 'changed' && !link.hasCarrier) next.set(id, link.ifname);
        else next.delete(id);
      }
      this.#setWithoutCarrier(next);
    }
    const mac = link.mac && ETHER_MAC.test(link.mac) ? normalMac(link.mac) : undefined;
    const pciAddress = mac ? this.#deps.pci?.pciOfLink(link.ifname, mac) : undefined;
    const row = mac ? devices.get(deviceIdOf({ pciAddress, mac })) : undefined;
    if (row && mac) {
      const isOnNode = link.kind === 'changed';
      devices.setPresence(row.id, isOnNode || row.interface_id !== null, isOnNode ? { atMs: now(), mac } : undefined);
    }
    if (vfs.length > 0 || row) this.#updated();
  }

  /**
   * True when a link event may change what a scan finds: the link is (or was) a device by its MAC or its
   * recorded name, an entry (by MAC, pattern or selectors) takes it in, or it is a device's PF (its carrier).
   */
  concerns(link: LinkEvent): boolean {
    const { devices } = this.#deps;
    if (this.#devicesOfPf.has(link.ifname)) return true;
    const mac = link.mac && ETHER_MAC.test(link.mac) ? normalMac(link.mac) : undefined;
    if (mac && devices.byMac(mac).length > 0) return true;
    if (devices.byHostIfName(link.ifname)) return true;
    if (!mac) return false;
    const pciAddress = this.#deps.pci?.pciOfLink(link.ifname, mac);
    const fn = pciAddress ? this.#deps.sysfs?.function(pciAddress) : undefined;
    // The event does not say the link's type: taken as Ethernet, at worst one rescan too many.
    return this.#matchers.some((m) => m.matches({ ifName: link.ifname, mac, linkType: 'ether', fn }));
  }

  async #scan(): Promise<ScanResult> {
    if (!this.isEnabled) return { refunded: 0, renamed: 0 };
    const { db, devices, log } = this.#deps;
    const listedAt = this.#deps.now();
    const links = await this.#deps.ip.listLinks(SELF);
    this.#deps.pci?.refresh(links);
    // Userspace devices (vfio-bound, no netdev) are in sysfs only: on the node while sysfs lists them.
    const found = this.#refuseOverlaps([
      ...this.#identified(links).map((d) => ({
        of: 'netdev' as const,
        d,
        label: `${d.id} (${d.link.ifname})`,
        groups: [...new Set(d.matched.map((m) => m.group))],
      })),
      ...(this.#deps.sysfs ? userspaceFunctionsOf(this.#deps.sysfs, this.#matchers) : []).map((u) => ({
        of: 'userspace' as const,
        d: u,
        label: `${u.id} (bound to vfio-pci)`,
        groups: u.groups,
      })),
    ]);
    const onNode = found.flatMap((f) => (f.of === 'netdev' ? [f.d] : []));
    const userspace = found.flatMap((f) => (f.of === 'userspace' ? [{ id: f.d.id, group: f.groups[0] ?? '' }] : []));
    const byId = new Map(onNode.map((d) => [d.id, d]));
    const inSysfs = new Set(userspace.map((u) => u.id));
    const now = this.#deps.now();
    const goneBefore = now - this.#deps.goneGraceSec * 1000;
    const refunds: DeviceWithAssignment[] = [];
    db.transaction(() => {
      this.#rekeyByPci(onNode);
      const configured = this.#upsertConfigured(onNode);
      for (const u of userspace) {
        configured.add(u.id);
        if (!devices.get(u.id)) devices.upsert(u.id, undefined, u.group, undefined);
      }
      for (const row of devices.all()) {
        if (!configured.has(row.id) && !this.#discoveredGroups.has(row.grp) && devices.remove(row.id)) {
          log.info({ device: row.id }, 'device no longer configured: dropped from the inventory');
          continue;
        }
        const here = byId.get(row.id);
        if (
          !here &&
          !configured.has(row.id) &&
          row.seen_at_ms !== null &&
          row.seen_at_ms < goneBefore &&
          devices.remove(row.id)
        ) {
          log.info(
            { device: row.id, lastSeen: new Date(row.seen_at_ms).toISOString() },
            'device off the node for longer than reconcile.deviceGoneGraceSec: dropped from the inventory',
          );
          continue;
        }
        // A device a pod holds is not on the node but accounted for: marked absent, it would count as
        // missing from its release (the DEL has brought it home) until the next scan, and be refused (106).
        // A userspace device never leaves sysfs for its pod (nothing moves): held or not, it is never a
        // device back from a dead pod.
        const isUserspaceHere = inSysfs.has(row.id);
        devices.setPresence(
          row.id,
          here !== undefined || isUserspaceHere || row.interface_id !== null,
          here ? { atMs: now, mac: here.mac } : isUserspaceHere ? { atMs: now } : undefined,
        );
        if (
          here &&
          row.interface_id !== null &&
          row.attachment_state === 'committed' &&
          (row.attachment_updated_at_ms ?? Number.POSITIVE_INFINITY) < listedAt
        ) {
          devices.detach(row.id);
          refunds.push(row);
        }
      }
    })();
    this.#readPfs(links);
    for (const r of refunds) {
      log.warn(
        { device: r.id, containerId: r.container_id, ifName: r.if_name, nameNow: byId.get(r.id)?.link.ifname },
        'delegated device is back on the node without a DEL (its pod netns is gone): freed',
      );
    }
    let renamed = 0;
    for (const row of devices.all()) {
      const link = byId.get(row.id)?.link;
      if (!link || row.interface_id !== null || !row.host_if_name || link.ifname === row.host_if_name) continue;
      if (await this.#renameHome(row.id, row.host_if_name, link.ifname, links)) renamed++;
    }
    return { refunded: refunds.length, renamed };
  }

  /**
   * A VF cannot pass traffic while its PF has no carrier (the cable out, the switch port down), though its
   * own netdev stays: the kubelet is told it is Unhealthy. A PF that is not on the node gives no verdict.
   */
  #readPfs(links: readonly IpLink[]): void {
    const { devices, pci } = this.#deps;
    const withoutCarrier = new Map<string, string>();
    const devicesOfPf = new Map<string, string[]>();
    for (const { id } of devices.all()) {
      const pf = isPciId(id) ? pci?.pfNetdevAt(id) : undefined;
      if (!pf) continue;
      devicesOfPf.set(pf, [...(devicesOfPf.get(pf) ?? []), id]);
      const link = links.find((l) => l.ifname === pf);
      if (link && !link.flags?.includes('LOWER_UP')) withoutCarrier.set(id, pf);
    }
    this.#devicesOfPf = devicesOfPf;
    this.#setWithoutCarrier(withoutCarrier);
  }

  #setWithoutCarrier(next: ReadonlyMap<string, string>): void {
    const { log } = this.#deps;
    for (const [device, pf] of next) {
      if (!this.#withoutCarrier.has(device))
        log.warn({ device, pf }, 'delegated device unhealthy: its PF has no carrier');
    }
    for (const [device, pf] of this.#withoutCarrier) {
      if (!next.has(device)) log.info({ device, pf }, 'delegated device healthy again: its PF has carrier');
    }
    this.#withoutCarrier = next;
  }

  /** The node's links that have a MAC, each with its identity (its PCI address where sysfs shows one). */
  #identified(links: readonly IpLink[]): NodeDevice[] {
    return links.flatMap((link) => {
      if (!link.address || !ETHER_MAC.test(link.address)) return [];
      const mac = normalMac(link.address);
      const pciAddress = this.#deps.pci?.pciOfLink(link.ifname, mac) ?? this.#lastSeenAt(mac);
      const fn = pciAddress ? this.#deps.sysfs?.function(pciAddress) : undefined;
      const facts = { ifName: link.ifname, mac, linkType: link.link_type, fn };
      const matched = this.#matchers.filter((m) => m.matches(facts));
      return [{ id: deviceIdOf({ pciAddress, mac }), mac, link, matched, ...(pciAddress ? { pciAddress } : {}) }];
    });
  }

  /**
   * The PCI address the inventory last saw this MAC at, when one device only was seen with it: a device
   * sysfs does not list under the name it has now (ferryd restarted while it was away from its name).
   */
  #lastSeenAt(mac: string): string | undefined {
    if (mac === ZERO_MAC) return undefined;
    const rows = this.#deps.devices.byMac(mac);
    const [row] = rows;
    return rows.length === 1 && row && isPciId(row.id) ? row.id : undefined;
  }

  /**
   * A device that entries of two groups match is nobody's: at ferryd's start that is refused (the config
   * is wrong), later (a device that appeared since) it is logged and the device left out.
   */
  #refuseOverlaps<T extends { label: string; groups: string[] }>(found: T[]): T[] {
    const overlaps = found.filter((f) => f.groups.length > 1);
    const first = this.#isFirstScan;
    this.#isFirstScan = false;
    if (overlaps.length === 0) return found;
    const what = (x: T) => `device ${x.label} is matched by the groups ${x.groups.map((g) => `"${g}"`).join(' and ')}`;
    if (first) {
      throw new StartupError(
        `delegatedDevices: ${overlaps.map(what).join('; ')}: a device may be in one group only; narrow the selectors`,
      );
    }
    for (const x of overlaps) this.#deps.log.error({ device: x.label, groups: x.groups }, `${what(x)}: left out`);
    return found.filter((f) => f.groups.length <= 1);
  }

  /**
   * A row keyed by MAC (from before schema 5, or from before sysfs showed the device) whose device is now
   * seen at a PCI address is keyed by that address, with its holder, reservation and name. A MAC that two
   * devices on the node share names neither: such rows stay as they are.
   */
  #rekeyByPci(onNode: readonly NodeDevice[]): void {
    const { devices, log } = this.#deps;
    const count = new Map<string, number>();
    for (const d of onNode) count.set(d.mac, (count.get(d.mac) ?? 0) + 1);
    for (const d of onNode) {
      if (!d.pciAddress || count.get(d.mac) !== 1 || devices.get(d.id) || !devices.get(d.mac)) continue;
      if (devices.rekey(d.mac, d.id)) log.info({ mac: d.mac, device: d.id }, 'device keyed by its PCI address');
    }
  }

  /**
   * Makes sure every configured device has a row: a `mac` entry's (each device on the node with that MAC,
   * else the rows last seen with it, else a row keyed by the MAC) and each device on the node a pattern
   * matches. Returns the identities of the devices the config names now.
   */
  #upsertConfigured(onNode: readonly NodeDevice[]): Set<string> {
    const { devices } = this.#deps;
    const configured = new Set<string>();
    for (const c of this.#deps.config) {
      if (!c.mac) continue;
      const mac = normalMac(c.mac);
      const here = onNode.filter((d) => d.mac === mac);
      for (const d of here) devices.upsert(d.id, mac, c.group, d.link.ifname);
      const known = here.length ? here.map((d) => d.id) : devices.byMac(mac).map((r) => r.id);
      if (known.length === 0) devices.upsert(mac, mac, c.group, undefined);
      for (const id of known.length ? known : [mac]) configured.add(id);
    }
    for (const d of onNode) {
      const m = d.matched.find((x) => x.kind !== 'mac');
      if (!m) continue;
      configured.add(d.id);
      // A pattern or selector names devices as they are found; the name at first sight is the one they keep.
      if (!devices.get(d.id)) devices.upsert(d.id, d.mac, m.group, d.link.ifname);
    }
    return configured;
  }

  /**
   * Renames one free device back to its recorded name. A failure is logged and left for the next scan:
   * the device may have been taken by an ADD since the links were listed, and one device never fails
   * the scan (or ferryd's start-up).
   */
  async #renameHome(id: string, hostIfName: string, nameNow: string, links: readonly IpLink[]): Promise<boolean> {
    const { devices, ip, log } = this.#deps;
    if (links.some((l) => l.ifname === hostIfName)) {
      log.warn({ device: id, name: hostIfName, nameNow }, 'cannot rename device home: its name is taken');
      return false;
    }
    if (devices.get(id)?.interface_id !== null) return false;
    try {
      await ip.apply(
        SELF,
        // A device back from a dead pod still carries the shim's marks (alias, link group).
        new IpBatch()
          .setDown(nameNow)
          .rename(nameNow, hostIfName)
          .setAlias(hostIfName, '')
          .setGroup(hostIfName, 'default'),
        `rename device ${id} home`,
      );
    } catch (err) {
      log.warn(
        { err, device: id, from: nameNow, to: hostIfName },
        'could not rename device home; the next scan tries again',
      );
      return false;
    }
    log.info({ device: id, from: nameNow, to: hostIfName }, 'delegated device renamed home');
    return true;
  }

  list(): Device[] {
    return this.#deps.devices.all().map((r) => this.#deviceOf(r));
  }

  #deviceOf(r: DeviceWithAssignment): Device {
    const reservation = reservationOf(r);
    const pfWithoutCarrier = this.#withoutCarrier.get(r.id);
    const pciAddress = isPciId(r.id) ? r.id : r.mac ? this.#deps.pci?.pciOf(r.mac) : undefined;
    return {
      id: r.id,
      ...(r.mac ? { mac: r.mac } : {}),
      group: r.grp,
      ...(r.host_if_name ? { hostIfName: r.host_if_name } : {}),
      ...(pciAddress ? { pciAddress } : {}),
      state: r.interface_id !== null ? 'assigned' : r.present ? 'free' : 'missing',
      ...(r.interface_id !== null && r.container_id && r.if_name
        ? {
            assignedTo: {
              containerId: r.container_id,
              ifName: r.if_name,
              ...(r.pod_namespace ? { podNamespace: r.pod_namespace } : {}),
              ...(r.pod_name ? { podName: r.pod_name } : {}),
            },
          }
        : {}),
      ...(reservation ? { reservation } : {}),
      ...(pfWithoutCarrier ? { pfWithoutCarrier } : {}),
      ...(r.seen_at_ms !== null ? { lastSeen: new Date(r.seen_at_ms).toISOString() } : {}),
    };
  }

  /**
   * The identity of the device an operator names: by its PCI address or identity, or by the MAC it was
   * last seen with when only one device has it.
   */
  idOf(device: string): string {
    const ref = device.includes(':') && !isPciId(device) ? normalMac(device) : device;
    if (this.#deps.devices.get(ref)) return ref;
    const rows = this.#deps.devices.byMac(ref);
    const [row] = rows;
    if (!row) throw unknownDevice(ref);
    if (rows.length > 1) {
      throw new CniError(
        Code.InvalidConfig,
        `device ${ref}: ${rows.length} devices have this MAC (${rows.map((r) => r.id).join(', ')}); name one by its PCI address`,
      );
    }
    return row.id;
  }

  /** Pre-assigns a device to a pod by namespace/name; it is held back from group requests. */
  reserve(device: string, req: ReservationRequest): Device {
    const id = this.idOf(device);
    const group = this.#deps.devices.get(id)?.grp;
    if (group !== undefined && this.#deps.served?.has(group)) {
      throw new CniError(
        Code.InvalidConfig,
        `reserve device ${id}: its group "${group}" is the resource ferry.dev/${group}, which the kubelet allocates: the pod asks with resources.limits`,
      );
    }
    const { addresses, routes } = req;
    const json = addresses.length || routes.length ? JSON.stringify({ addresses, routes }) : undefined;
    if (
      !this.#deps.devices.reserve(id, {
        namespace: req.namespace,
        pod: req.pod,
        ...(req.ifName ? { ifName: req.ifName } : {}),
        ...(json ? { json } : {}),
      })
    ) {
      throw unknownDevice(id);
    }
    return this.#one(id);
  }

  unreserve(device: string): Device {
    const id = this.idOf(device);
    if (!this.#deps.devices.unreserve(id)) throw unknownDevice(id);
    return this.#one(id);
  }

  /** The device with this identity, as `list` gives it. */
  #one(id: string): Device {
    const r = this.#deps.devices.all().find((x) => x.id === id);
    if (!r) throw unknownDevice(id);
    return this.#deviceOf(r);
  }
}

function unknownDevice(device: string): CniError {
  return new CniError(Code.NotFound, `device ${device} is not in the inventory`);
}

/** A stored reservation, parsed (it is a boundary: the row may be from another ferryd version). */
export function reservationOf(r: {
  reserved_namespace: string | null;
  reserved_pod: string | null;
  reserved_if_name: string | null;
  reserved_json: string | null;
}): ReservationRequest | undefined {
  if (r.reserved_namespace === null || r.reserved_pod === null) return undefined;
  const extra = r.reserved_json ? JSON.parse(r.reserved_json) : {};
  return parseRow(
    ReservationRequestSchema,
    {
      namespace: r.reserved_namespace,
      pod: r.reserved_pod,
      ...(r.reserved_if_name ? { ifName: r.reserved_if_name } : {}),
      ...extra,
    },
    'devices',
  );
}
