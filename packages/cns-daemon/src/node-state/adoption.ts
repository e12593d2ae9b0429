/**
 * The node is the second source of truth (DESIGN.md): every InfraNIC's host veth carries a marker
 * (shared-types/link-marker.ts) naming its attachment and generation, and routes the pod's addresses
 * (/32, /128). An attachment the database does not hold — a new, empty, corrupt or restored database,
 * lost WAL frames — or holds only in an older generation than the node shows, is rebuilt from them
 * ("adopted"): its addresses are held again (taken from whoever the database gave them to: the kernel
 * routes each to one veth only), the delegated devices found in its pod are in use, a DEL releases it.
 *
 * Trust. A host veth's alias and routes live on the node, where only root writes: they decide the key,
 * the generation and the addresses. What is read inside a pod (whose root can rewrite its links) decides
 * only which of that pod's own links are its delegated devices, and a device is taken only when ferryd
 * would give it to that pod anyway: configured (in the inventory by MAC), not on the node, held by no
 * other interface, and claimed by no other pod in the same pass (two claims: neither gets it).
 *
 * Runs in every reconcile pass (so once before ready). The node is read outside any transaction, so an
 * attachment whose release was asked for since a little before the pass (Attachments.releaseAskedSince)
 * is not brought back: a DEL deletes the veth before it releases, CNI GC releases before the shim deletes.
 * An adopted attachment whose host veth is gone (its pod is) is released by the next pass.
 *
 * A secondary network's attachment (infraNIC: false) has no host veth: its device, in the pod, is the
 * attachment and its marker names the key and generation. Those are found in the pods this pass reads
 * (those of host veths it adopts: a database that lost them lost their pods' secondary attachments too)
 * and adopted after the host veths, so nothing a pod says can take what a trusted marker gave: the
 * device only as above, its addresses only inside that network's pool and only where no interface holds
 * them.
 */
import { type Ip, type IpLink, netnsAt, SELF } from '@ferry/net';
import { HOST_VETH_MAC, HOST_VETH_PREFIX } from '@ferry/shared-types/host-veth';
import {
  type AttachmentKey,
  DELEGATED_GROUP,
  type HostVethMarker,
  parseHostVethMarker,
  parseMarker,
} from '@ferry/shared-types/link-marker';
import { endpointIdOf } from '@ferry/shared-types/nic';
import type { Logger } from 'pino';
import type { Attachments } from '../attachments/attachments';
import { hostVethNameOf } from '../attachments/host-veth';
import { bitsOf, contains, type Family, familyOf, toBigInt } from '../ipam/cidr';
import type { Ipam } from '../ipam/ipam';
import { offsetHex, type PoolSpec } from '../ipam/pool';
import type { AdoptedStore } from '../store/adopted';
import type { AttachmentStore } from '../store/attachments';
import { type Db, transactionRunner } from '../store/db';
import type { DeviceStore } from '../store/devices';
import type { PoolStore } from '../store/pools';
import type { DeviceRow } from '../store/rows';

/** A release asked for this long before a pass still keeps its attachment from being adopted. */
const RELEASE_MEMORY_MS = 30_000;
/** Pods whose links are read at once (one `ip` in the pod's netns each). */
const POD_READS_AT_ONCE = 8;

export interface AdoptionDeps {
  db: Db;
  attachmentStore: AttachmentStore;
  adopted: AdoptedStore;
  pools: PoolStore;
  devices: DeviceStore;
  ipam: Ipam;
  attachments: Attachments;
  ip: Ip;
  log: Logger;
  now: () => number;
  /** Counts adopted attachments (the metric). */
  onAdopted?: (n: number) => void;
}

export interface AdoptionResult {
  /** Attachments rebuilt from the node. */
  adopted: number;
  /** Of those, how many replaced an older generation the database held. */
  replaced: number;
  /** Delegated devices found in adopted pods and held for them (a secondary network's included). */
  devices: number;
  /** Adopted attachments released because their host veth is gone. */
  released: number;
}

interface PoolAddress {
  spec: PoolSpec;
  poolId: number;
  address: string;
}

/** A marked host veth whose attachment the database lacks (or holds in an older generation). */
interface Candidate {
  veth: string;
  generation: number;
  network: string;
  containerId: string;
  ifName: string;
  netns: string;
  addresses: PoolAddress[];
  /** The pod's links (undefined: no netns known, or it could not be read). */
  podLinks?: IpLink[];
  /** Candidates in this netns, this one included. */
  inSameNetns: number;
}

/** What one listing of the node shows: every MAC (current or permanent) and every name. */
interface NodeLinks {
  macs: ReadonlySet<string>;
  names: ReadonlySet<string>;
}

/** A secondary network's device found in a pod this pass reads, its marker naming an attachment the database lacks. */
interface SecondaryCandidate {
  netns: string;
  link: IpLink;
  key: AttachmentKey;
  hostIfName: string;
  /** The device's addresses in the pod (CIDR notation). */
  addresses: string[];
}

const macOf = (l: IpLink) => (l.permaddr ?? l.address)?.toLowerCase();

export class Adoption {
  readonly #deps: AdoptionDeps;
  readonly #tx: <T>(fn: () => T) => T;
  /** Veths already reported as unusable, so each is logged once, not every pass. */
  readonly #reported = new Set<string>();

  constructor(deps: AdoptionDeps) {
    this.#deps = deps;
    this.#tx = transactionRunner(deps.db);
  }

  async pass(): Promise<AdoptionResult> {
    const { ip, attachments } = this.#deps;
    const startedAt = this.#deps.now();
    const since = startedAt - RELEASE_MEMORY_MS;
    // Together: each is an `ip` run, and a taking-over ferryd's first pass is time its predecessor holds requests.
    const [links, routes] = await Promise.all([ip.listLinks(SELF), ip.listRoutes(SELF)]);
    const hostAddresses = new Map<string, string[]>();
    for (const r of routes) {
      if (!r.dev?.startsWith(HOST_VETH_PREFIX)) continue;
      hostAddresses.set(r.dev, [...(hostAddresses.get(r.dev) ?? []), r.dst]);
    }
    const marked = links.flatMap((l) => {
      const marker = l.linkinfo?.info_kind === 'veth' ? parseHostVethMarker(l.ifalias) : undefined;
      return marker ? [{ link: l, marker }] : [];
    });
    const candidates: Candidate[] = [];
    for (const { link, marker } of marked) {
      const c = this.#candidateOf(link.ifname, marker, hostAddresses.get(link.ifname) ?? [], since);
      if (c) candidates.push(c);
    }
    for (const c of candidates) {
      c.inSameNetns = c.netns === '' ? 1 : candidates.filter((o) => o.netns === c.netns).length;
    }
    await this.#readPods(candidates);
    const secondaries = await this.#secondariesIn(candidates, since);
    const maxGeneration = Math.max(
      0,
      ...marked.map((m) => m.marker.generation),
      ...secondaries.map((s) => s.key.generation),
    );
    const onNode: NodeLinks = {
      macs: new Set(links.flatMap((l) => macOf(l) ?? [])),
      names: new Set(links.map((l) => l.ifname)),
    };
    const result = this.#tx(() => {
      const r: AdoptionResult = { adopted: 0, replaced: 0, devices: 0, released: 0 };
      // Generations never repeat, whatever the database forgot: the next one is above all the node shows.
      if (maxGeneration > this.#deps.adopted.sequence()) this.#deps.adopted.raiseSequence(maxGeneration);
      const claims = deviceClaims(candidates, secondaries);
      for (const c of candidates) {
        const outcome = this.#adopt(c, since, claims, onNode);
        if (!outcome) continue;
        r.adopted++;
        if (outcome.replaced) r.replaced++;
        r.devices += outcome.devices;
      }
      // After the host veths: a pod's word never takes what a trusted marker gave.
      for (const sc of secondaries) {
        const outcome = this.#adoptSecondary(sc, since, claims, onNode);
        if (!outcome) continue;
        r.adopted++;
        if (outcome.replaced) r.replaced++;
        r.devices++;
      }
      return r;
    });
    result.released = this.#releaseVanished(onNode.names);
    attachments.forgetReleasesBefore(since);
    if (result.adopted > 0) {
      this.#deps.onAdopted?.(result.adopted);
      this.#deps.log.warn(
        { ...result, tookMs: this.#deps.now() - startedAt },
        'endpoints adopted from the node: the database did not hold them',
      );
    }
    return result;
  }

  /** The candidate a marked veth makes, or undefined when the database already holds its attachment. */
  #candidateOf(veth: string, marker: HostVethMarker, dsts: readonly string[], sinceMs: number): Candidate | undefined {
    // A marker too long for its key (network and container ID past 255 bytes together) names no key: the
    // addresses are held under the veth's name until the veth goes (a DEL cannot find them by its key).
    const containerId = marker.containerId ?? `adopted.${veth}`;
    if (marker.network !== undefined && hostVethNameOf(marker.network, containerId, marker.ifName) !== veth) {
      this.#reportOnce(veth, { marker }, 'host veth marker does not match its name: not adopted');
      return undefined;
    }
    if (this.#deps.attachments.releaseAskedSince(containerId, marker.ifName, sinceMs)) return undefined;
    const held = this.#deps.attachmentStore.getAttachment(containerId, marker.ifName);
    if (held && held.generation >= marker.generation) return undefined;
    // Only now, for the few veths the database lacks: every pass sees every pod's veth.
    const addresses = dsts.flatMap((dst) => this.#poolAddressOf(dst));
    const network = marker.network ?? addresses[0]?.spec.network;
    if (network === undefined) return undefined;
    return {
      veth,
      generation: marker.generation,
      network,
      containerId,
      ifName: marker.ifName,
      netns: marker.netns ?? '',
      addresses,
      inSameNetns: 1,
    };
  }

  /** A host route's destination as a pool address (a /32 or /128 inside a configured pool), if it is one. */
  #poolAddressOf(dst: string): PoolAddress[] {
    const [address = '', prefix] = dst.split('/');
    let family: Family;
    try {
      family = familyOf(address);
    } catch {
      return [];
    }
    if (Number(prefix) !== bitsOf(family)) return [];
    const n = toBigInt(address);
    for (const net of this.#deps.ipam.networks()) {
      for (const p of net.pools) {
        if (p.spec.family === family && contains(p.spec.subnet, n))
          return [{ spec: p.spec, poolId: p.poolId, address }];
      }
    }
    return [];
  }

  async #readPods(candidates: Candidate[]): Promise<void> {
    const queue = candidates.filter((c) => c.netns !== '');
    const read = async () => {
      for (let c = queue.shift(); c; c = queue.shift()) {
        try {
          c.podLinks = (await this.#deps.ip.linksIfPresent(netnsAt(c.netns))) ?? [];
        } catch (err) {
          this.#deps.log.warn(
            { err, netns: c.netns },
            'could not read the pod of an adopted endpoint: its devices wait',
          );
        }
      }
    };
    await Promise.all(Array.from({ length: POD_READS_AT_ONCE }, read));
  }

  /** One candidate, inside the pass's transaction; undefined when it no longer needs adopting. */
  #adopt(
    c: Candidate,
    sinceMs: number,
    claims: ReadonlyMap<string, number>,
    onNode: NodeLinks,
  ): { replaced: boolean; devices: number } | undefined {
    const { attachmentStore, adopted, pools, attachments, ipam, log } = this.#deps;
    // Read again: the first look was before the pod reads.
    if (attachments.releaseAskedSince(c.containerId, c.ifName, sinceMs)) return undefined;
    const held = attachmentStore.getAttachment(c.containerId, c.ifName);
    if (held && held.generation >= c.generation) return undefined;
    // A restored database's older incarnation: the node's is the one that lives.
    if (held) attachments.release(held.container_id, held.network, held.if_name, held.generation);
    const now = this.#deps.now();
    const row = adopted.insert(c, now);
    const infraId = attachmentStore.insertInterface({
      attachmentId: row.generation,
      position: 0,
      containerId: c.containerId,
      ifName: c.ifName,
      endpointId: endpointIdOf('InfraNIC', c.containerId, c.ifName),
      nicType: 'InfraNIC',
      routesJson: ipam.networks().find((n) => n.config.name === c.network)?.routesJson ?? '[]',
      hostVethName: c.veth,
    });
    // What the pod side shows is only recorded for CHECK: nothing is decided by it.
    const peer = c.podLinks?.find((l) => l.ifname === c.ifName && l.linkinfo?.info_kind === 'veth');
    if (peer?.address) attachmentStore.commitInterface(row.generation, c.ifName, peer.address, peer.ifindex);
    for (const a of c.addresses) {
      const hex = offsetHex(a.spec, toBigInt(a.address));
      const before = pools.rowAt(a.poolId, hex);
      if (before?.interface_id != null && before.interface_id !== infraId) {
        log.warn(
          { address: a.address, containerId: c.containerId, ifName: c.ifName, fromInterface: before.interface_id },
          'address recorded for another interface is routed to this pod on the node: the node wins',
        );
      }
      pools.claim(a.poolId, hex, a.address, infraId, now);
    }
    const devices = this.#adoptDevices(c, row.generation, claims, onNode);
    log.warn(
      {
        containerId: c.containerId,
        ifName: c.ifName,
        network: c.network,
        generation: row.generation,
        netns: c.netns || undefined,
        addresses: c.addresses.map((a) => a.address),
        devices,
        ...(held ? { replacedGeneration: held.generation } : {}),
      },
      held ? 'endpoint adopted: the node holds a newer generation than the database' : 'endpoint adopted from the node',
    );
    return { replaced: held !== undefined, devices };
  }

  /** The candidate's delegated devices, each held for it when ferryd would give it to that pod anyway. */
  #adoptDevices(c: Candidate, attachmentId: number, claims: ReadonlyMap<string, number>, onNode: NodeLinks): number {
    const { attachmentStore, devices, log } = this.#deps;
    const names = new Set([c.ifName, ...attachmentStore.interfacesOfContainer(c.containerId).map((i) => i.if_name)]);
    let n = 0;
    for (const l of claimedLinks(c)) {
      const mac = macOf(l);
      const row = mac ? devices.get(mac) : undefined;
      const refused =
        this.#deviceRefusal(mac, row, claims, onNode) ??
        (names.has(l.ifname) ? `interface name ${l.ifname} is taken in the container` : undefined);
      const hostIfName = refused || !row ? undefined : this.#hostNameOf(row, l, onNode);
      if (!row || !hostIfName) {
        log.warn(
          { containerId: c.containerId, ifName: l.ifname, mac, reason: refused ?? 'its name on the node is not known' },
          'device in pod not adopted',
        );
        continue;
      }
      names.add(l.ifname);
      const interfaceId = attachmentStore.insertInterface({
        attachmentId,
        position: n + 1,
        containerId: c.containerId,
        ifName: l.ifname,
        endpointId: endpointIdOf('DelegatedNIC', c.containerId, l.ifname),
        nicType: 'DelegatedNIC',
        routesJson: '[]',
        hostIfName,
        deviceMac: row.mac,
      });
      if (l.address) attachmentStore.commitInterface(attachmentId, l.ifname, l.address, l.ifindex);
      devices.assign(row.mac, interfaceId);
      n++;
    }
    return n;
  }

  /**
   * The device's name on the node. A device configured by MAC that a fresh database has never seen on
   * the node has none recorded: it takes the one its marker names (what the shim wrote when it moved the
   * device in), if that is a valid name no link on the node has. Only the name comes from the pod, and
   * only for a device that is ferryd's anyway; a false one fails that device's DEL with code 107 at
   * worst, and never touches another link.
   */
  #hostNameOf(row: DeviceRow, l: IpLink, onNode: NodeLinks): string | undefined {
    if (row.host_if_name) return row.host_if_name;
    const named = parseMarker(l.ifalias)?.hostIfName;
    if (!named || onNode.names.has(named)) return undefined;
    this.#deps.devices.upsert(row.mac, row.grp, named);
    return named;
  }

  /** The secondary networks' devices in the pods read, whose attachment the database lacks, with their addresses. */
  async #secondariesIn(candidates: readonly Candidate[], sinceMs: number): Promise<SecondaryCandidate[]> {
    const { attachmentStore, attachments, ip } = this.#deps;
    const found: SecondaryCandidate[] = [];
    const seen = new Set<string>();
    for (const c of candidates) {
      if (c.netns === '' || seen.has(c.netns)) continue;
      seen.add(c.netns);
      for (const link of c.podLinks ?? []) {
        const marker = parseMarker(link.ifalias);
        const key = marker?.attachment;
        // The device takes CNI_IFNAME: its marker's attachment is its own name.
        if (!marker || !key || marker.attachmentIfName !== link.ifname) continue;
        if (attachments.releaseAskedSince(key.containerId, link.ifname, sinceMs)) continue;
        const held = attachmentStore.getAttachment(key.containerId, link.ifname);
        if (held && held.generation >= key.generation) continue;
        const shown = await ip.linkAddresses(netnsAt(c.netns), link.ifname).catch(() => undefined);
        const addresses = (shown?.addr_info ?? []).map((a) => `${a.local}/${a.prefixlen}`);
        found.push({ netns: c.netns, link, key, hostIfName: marker.hostIfName, addresses });
      }
    }
    return found;
  }

  /** One secondary network's attachment, inside the pass's transaction; undefined when not adopted. */
  #adoptSecondary(
    sc: SecondaryCandidate,
    sinceMs: number,
    claims: ReadonlyMap<string, number>,
    onNode: NodeLinks,
  ): { replaced: boolean } | undefined {
    const { attachmentStore, adopted, attachments, devices, ipam, log } = this.#deps;
    const { key, link } = sc;
    const net = ipam.networks().find((n) => n.config.name === key.network);
    const mac = macOf(link);
    const row = mac ? devices.get(mac) : undefined;
    const refused = !net
      ? 'no such network'
      : net.config.infraNIC
        ? 'not a secondary network'
        : this.#deviceRefusal(mac, row, claims, onNode);
    const hostIfName = refused || !row ? undefined : this.#hostNameOf(row, link, onNode);
    if (!net || !row || !hostIfName || attachments.releaseAskedSince(key.containerId, link.ifname, sinceMs)) {
      if (refused || !hostIfName)
        log.warn(
          { ...key, ifName: link.ifname, mac, reason: refused ?? 'its name on the node is not known' },
          'secondary network device in pod not adopted',
        );
      return undefined;
    }
    const held = attachmentStore.getAttachment(key.containerId, link.ifname);
    if (held && held.generation >= key.generation) return undefined;
    if (held) attachments.release(held.container_id, held.network, held.if_name, held.generation);
    const now = this.#deps.now();
    const attachment = adopted.insert({ ...key, ifName: link.ifname, netns: sc.netns }, now);
    const interfaceId = attachmentStore.insertInterface({
      attachmentId: attachment.generation,
      position: 0,
      containerId: key.containerId,
      ifName: link.ifname,
      endpointId: endpointIdOf('DelegatedNIC', key.containerId, link.ifname),
      nicType: 'DelegatedNIC',
      routesJson: net.routesJson,
      hostIfName,
      deviceMac: row.mac,
    });
    if (link.address) attachmentStore.commitInterface(attachment.generation, link.ifname, link.address, link.ifindex);
    devices.assign(row.mac, interfaceId);
    const claimed = sc.addresses.flatMap((a) => this.#claimUnheld(net.pools, a, interfaceId, now));
    log.warn(
      { ...key, ifName: link.ifname, netns: sc.netns, device: row.mac, addresses: claimed },
      'secondary network endpoint adopted from its device in the pod',
    );
    return { replaced: held !== undefined };
  }

  /** Why a device a pod shows may not be held for it; undefined when ferryd would give it to that pod anyway. */
  #deviceRefusal(
    mac: string | undefined,
    row: DeviceRow | undefined,
    claims: ReadonlyMap<string, number>,
    onNode: NodeLinks,
  ): string | undefined {
    if (!mac) return 'no MAC';
    if (!row) return 'not in the inventory';
    if (row.interface_id !== null) return 'held by another interface';
    if (onNode.macs.has(mac)) return 'a device with that MAC is on the node';
    return (claims.get(mac) ?? 0) > 1 ? 'claimed by more than one pod' : undefined;
  }

  /** `cidr`'s address, Assigned to `interfaceId` if it is in one of `pools` and no interface holds it. */
  #claimUnheld(pools: readonly { spec: PoolSpec; poolId: number }[], cidr: string, interfaceId: number, now: number) {
    const address = cidr.split('/')[0] ?? '';
    let family: Family;
    try {
      family = familyOf(address);
    } catch {
      return [];
    }
    const n = toBigInt(address);
    const pool = pools.find((p) => p.spec.family === family && contains(p.spec.subnet, n));
    if (!pool) return [];
    const hex = offsetHex(pool.spec, n);
    if (this.#deps.pools.rowAt(pool.poolId, hex)?.interface_id != null) return [];
    this.#deps.pools.claim(pool.poolId, hex, address, interfaceId, now);
    return [address];
  }

  /** Adopted attachments whose host veth has gone (the pod with it): released now, as a DEL would. */
  #releaseVanished(present: ReadonlySet<string>): number {
    const { adopted, attachmentStore, attachments, log } = this.#deps;
    let released = 0;
    for (const a of adopted.adopted()) {
      const infra = attachmentStore.interfacesOf(a.generation).find((i) => i.nic_type === 'InfraNIC');
      if (!infra?.host_veth_name || present.has(infra.host_veth_name)) continue;
      attachments.release(a.container_id, a.network, a.if_name, a.generation);
      released++;
      log.info(
        { containerId: a.container_id, ifName: a.if_name, hostVethName: infra.host_veth_name },
        'adopted endpoint released: its host veth is gone',
      );
    }
    return released;
  }

  #reportOnce(veth: string, fields: Record<string, unknown>, msg: string): void {
    if (this.#reported.has(veth)) return;
    this.#reported.add(veth);
    this.#deps.log.warn({ hostVethName: veth, ...fields }, msg);
  }
}

/** How many candidates claim each MAC: a device two pods (or two attachments) claim is neither's. */
function deviceClaims(
  candidates: readonly Candidate[],
  secondaries: readonly SecondaryCandidate[],
): Map<string, number> {
  const claims = new Map<string, number>();
  const links = [...candidates.flatMap((c) => claimedLinks(c)), ...secondaries.map((s) => s.link)];
  for (const l of links) {
    const mac = macOf(l);
    if (mac) claims.set(mac, (claims.get(mac) ?? 0) + 1);
  }
  return claims;
}

/**
 * The pod's links that say they are this attachment's delegated devices: their marker names it, or (the
 * alias overwritten) they are still in Ferry's link group and no other attachment is being adopted in
 * that netns. The InfraNIC's own peer, loopback and links without a MAC never are.
 */
function claimedLinks(c: Candidate): IpLink[] {
  return (c.podLinks ?? []).filter((l) => {
    if (l.ifname === c.ifName || l.ifname === 'lo' || !macOf(l) || macOf(l) === HOST_VETH_MAC) return false;
    const marker = parseMarker(l.ifalias);
    if (marker) return marker.attachmentIfName === c.ifName;
    return l.group === String(DELEGATED_GROUP) && c.inSameNetns === 1;
  });
}
