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
import type { Db } from '../store/db';
import type { DeviceStore, DeviceWithAssignment } from '../store/devices';
import { parseRow } from '../store/rows';
import type { PciAddresses } from './pci';

export interface InventoryDeps {
  db: Db;
  devices: DeviceStore;
  ip: Ip;
  config: FerrydConfig['delegatedDevices'];
  log: Logger;
  now: () => number;
  /** Told each scan's listing, to read the devices' PCI addresses again. */
  pci?: PciAddresses;
  /** The groups served to the kubelet (its allocation gives their devices, never a reservation). */
  served?: ReadonlySet<string>;
}

export interface ScanResult {
  refunded: number;
  renamed: number;
}

const normalMac = (mac: string) => mac.toLowerCase();
const ETHER_MAC = /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/i;

export class Inventory {
  readonly #deps: InventoryDeps;
  readonly #patterns: { re: RegExp; group: string }[];
  #updated: () => void = () => undefined;
  /** The devices whose PF has no carrier: MAC → the PF's netdev. */
  #withoutCarrier: ReadonlyMap<string, string> = new Map();
  /** Each PF netdev's devices (MACs), as the last scan found them. */
  #devicesOfPf: ReadonlyMap<string, readonly string[]> = new Map();
  /** The scan in progress (or the last one): scans run one at a time (see scan()). */
  #scanning: Promise<unknown> = Promise.resolve();

  constructor(deps: InventoryDeps) {
    this.#deps = deps;
    this.#patterns = deps.config.flatMap((c) =>
      c.namePattern ? [{ re: new RegExp(c.namePattern), group: c.group }] : [],
    );
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
   * scan that follows the event (LinkHealth asks for one) settles the rest and corrects this if it was
   * stale. The rule for presence is the scan's: a device a pod holds is accounted for.
   */
  applyLinkEvent(link: LinkEvent): void {
    const { devices, now } = this.#deps;
    const vfs = this.#devicesOfPf.get(link.ifname) ?? [];
    if (vfs.length > 0) {
      const next = new Map(this.#withoutCarrier);
      for (const mac of vfs) {
        if (link.kind === 'changed' && !link.hasCarrier) next.set(mac, link.ifname);
        else next.delete(mac);
      }
      this.#setWithoutCarrier(next);
    }
    const row = link.mac ? devices.get(normalMac(link.mac)) : undefined;
    if (row) {
      const isOnNode = link.kind === 'changed';
      devices.setPresence(row.mac, isOnNode || row.interface_id !== null, isOnNode ? now() : undefined);
    }
    if (vfs.length > 0 || row) this.#updated();
  }

  /**
   * True when a link event may change what a scan finds: the link is (or was) a device by its MAC or its
   * recorded name, a name pattern takes it in, or it is a device's PF (its carrier).
   */
  concerns(link: LinkEvent): boolean {
    if (this.#devicesOfPf.has(link.ifname)) return true;
    if (link.mac && this.#deps.devices.get(normalMac(link.mac))) return true;
    if (this.#deps.devices.byHostIfName(link.ifname)) return true;
    return this.#patterns.some((p) => p.re.test(link.ifname));
  }

  async #scan(): Promise<ScanResult> {
    if (!this.isEnabled) return { refunded: 0, renamed: 0 };
    const { db, devices, ip, log } = this.#deps;
    const listedAt = this.#deps.now();
    const links = await ip.listLinks(SELF);
    const byMac = new Map(links.filter((l) => l.address).map((l) => [normalMac(l.address as string), l]));
    this.#deps.pci?.refresh((name) => links.find((l) => l.ifname === name)?.address);
    const now = this.#deps.now();
    const refunds: DeviceWithAssignment[] = [];
    db.transaction(() => {
      const configured = new Set<string>();
      for (const c of this.#deps.config) {
        if (!c.mac) continue;
        const mac = normalMac(c.mac);
        configured.add(mac);
        devices.upsert(mac, c.group, byMac.get(mac)?.ifname);
      }
      for (const l of links) {
        // Only Ethernet devices with a real MAC can be delegated (not tunnels, not loopback).
        if (!l.address || l.link_type !== 'ether' || !ETHER_MAC.test(l.address)) continue;
        const p = this.#patterns.find((x) => x.re.test(l.ifname));
        if (!p) continue;
        const mac = normalMac(l.address);
        configured.add(mac);
        // A pattern names devices as they are found; the name at first sight is the one they keep.
        if (!devices.get(mac)) devices.upsert(mac, p.group, l.ifname);
      }
      const patternGroups = new Set(this.#patterns.map((p) => p.group));
      for (const row of devices.all()) {
        if (!configured.has(row.mac) && !patternGroups.has(row.grp) && devices.remove(row.mac)) {
          log.info({ mac: row.mac }, 'device no longer configured: dropped from the inventory');
          continue;
        }
        const link = byMac.get(row.mac);
        // A device a pod holds is not on the node but accounted for: marked absent, it would count as
        // missing from its release (the DEL has brought it home) until the next scan, and be refused (106).
        devices.setPresence(row.mac, link !== undefined || row.interface_id !== null, link ? now : undefined);
        if (
          link &&
          row.interface_id !== null &&
          row.attachment_state === 'committed' &&
          (row.attachment_updated_at_ms ?? Number.POSITIVE_INFINITY) < listedAt
        ) {
          devices.detach(row.mac);
          refunds.push(row);
        }
      }
    })();
    this.#readPfs(links);
    for (const r of refunds) {
      log.warn(
        { mac: r.mac, containerId: r.container_id, ifName: r.if_name, nameNow: byMac.get(r.mac)?.ifname },
        'delegated device is back on the node without a DEL (its pod netns is gone): freed',
      );
    }
    let renamed = 0;
    for (const row of devices.all()) {
      const link = byMac.get(row.mac);
      if (!link || row.interface_id !== null || !row.host_if_name || link.ifname === row.host_if_name) continue;
      if (await this.#renameHome(row.mac, row.host_if_name, link.ifname, links)) renamed++;
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
    for (const { mac } of devices.all()) {
      const pf = pci?.pfNetdevOf(mac);
      if (!pf) continue;
      devicesOfPf.set(pf, [...(devicesOfPf.get(pf) ?? []), mac]);
      const link = links.find((l) => l.ifname === pf);
      if (link && !link.flags?.includes('LOWER_UP')) withoutCarrier.set(mac, pf);
    }
    this.#devicesOfPf = devicesOfPf;
    this.#setWithoutCarrier(withoutCarrier);
  }

  #setWithoutCarrier(next: ReadonlyMap<string, string>): void {
    const { log } = this.#deps;
    for (const [mac, pf] of next) {
      if (!this.#withoutCarrier.has(mac)) log.warn({ mac, pf }, 'delegated device unhealthy: its PF has no carrier');
    }
    for (const [mac, pf] of this.#withoutCarrier) {
      if (!next.has(mac)) log.info({ mac, pf }, 'delegated device healthy again: its PF has carrier');
    }
    this.#withoutCarrier = next;
  }

  /**
   * Renames one free device back to its recorded name. A failure is logged and left for the next scan:
   * the device may have been taken by an ADD since the links were listed, and one device never fails
   * the scan (or ferryd's start-up).
   */
  async #renameHome(mac: string, hostIfName: string, nameNow: string, links: readonly IpLink[]): Promise<boolean> {
    const { devices, ip, log } = this.#deps;
    if (links.some((l) => l.ifname === hostIfName)) {
      log.warn({ mac, name: hostIfName, nameNow }, 'cannot rename device home: its name is taken');
      return false;
    }
    if (devices.get(mac)?.interface_id !== null) return false;
    try {
      await ip.apply(
        SELF,
        // A device back from a dead pod still carries the shim's marks (alias, link group).
        new IpBatch()
          .setDown(nameNow)
          .rename(nameNow, hostIfName)
          .setAlias(hostIfName, '')
          .setGroup(hostIfName, 'default'),
        `rename device ${mac} home`,
      );
    } catch (err) {
      log.warn({ err, mac, from: nameNow, to: hostIfName }, 'could not rename device home; the next scan tries again');
      return false;
    }
    log.info({ mac, from: nameNow, to: hostIfName }, 'delegated device renamed home');
    return true;
  }

  list(): Device[] {
    return this.#deps.devices.all().map((r): Device => {
      const reservation = reservationOf(r);
      const pciAddress = this.#deps.pci?.pciOf(r.mac);
      const pfWithoutCarrier = this.#withoutCarrier.get(r.mac);
      return {
        mac: r.mac,
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
    });
  }

  /** Pre-assigns a device to a pod by namespace/name; it is held back from group requests. */
  reserve(mac: string, req: ReservationRequest): Device {
    const m = normalMac(mac);
    const group = this.#deps.devices.get(m)?.grp;
    if (group !== undefined && this.#deps.served?.has(group)) {
      throw new CniError(
        Code.InvalidConfig,
        `reserve device ${m}: its group "${group}" is the resource ferry.dev/${group}, which the kubelet allocates: the pod asks with resources.limits`,
      );
    }
    const { addresses, routes } = req;
    const json = addresses.length || routes.length ? JSON.stringify({ addresses, routes }) : undefined;
    if (
      !this.#deps.devices.reserve(m, {
        namespace: req.namespace,
        pod: req.pod,
        ...(req.ifName ? { ifName: req.ifName } : {}),
        ...(json ? { json } : {}),
      })
    ) {
      throw unknownDevice(m);
    }
    return this.#one(m);
  }

  unreserve(mac: string): Device {
    const m = normalMac(mac);
    if (!this.#deps.devices.unreserve(m)) throw unknownDevice(m);
    return this.#one(m);
  }

  #one(mac: string): Device {
    const d = this.list().find((x) => x.mac === mac);
    if (!d) throw unknownDevice(mac);
    return d;
  }
}

function unknownDevice(mac: string): CniError {
  return new CniError(Code.NotFound, `device ${mac} is not in the inventory`);
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
