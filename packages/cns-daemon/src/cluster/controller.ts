/**
 * The cluster controller: takes each view of a PeerSource and makes the node hold exactly Ferry's
 * entries for it. The kernel is read once at start and every `resyncSec` (to repair what someone else
 * changed); in between, each view is diffed against what ferryd last programmed, so one node's change
 * costs one small batch whatever the cluster's size. Views arriving during a sync collapse into one.
 * Nothing is withdrawn on stop: traffic keeps flowing while ferryd is away.
 */
import type { Ip, Netns } from '@ferry/net';
import type { ClusterConfig } from '@ferry/shared-types/config/ferryd';
import type { Logger } from 'pino';
import { CoalescedRun } from '../coalesced-run';
import { canonicalAddress, type Family, familyOf } from '../ipam/cidr';
import { changeCount, diff, diffTouched } from './diff';
import type { EgressStep } from './egress';
import { applyChanges, type Refused, readEntries } from './kernel';
import type { Peer, PeerSource } from './peers';
import { type Entries, Planner, vtepAddress, vtepMac, vtepOf } from './plan';
import { ensureVxlanDevice } from './vxlan-device';

/** The blocks this node holds of cluster-IPAM ranges (ipam/blocks/manager.ts), routed to by its peers. */
export interface OwnBlocks {
  cidrs(): readonly string[];
  /** Called after every claim or release. */
  onChange(listener: () => void): void;
}

export interface ClusterControllerDeps {
  config: ClusterConfig;
  /** This node's pod CIDRs (cluster.podCIDRs, or the subnets of networks that are not ranges). */
  ownPodCIDRs: readonly string[];
  /** Cluster IPAM: the blocks this node holds (its VXLAN end comes from them, and no peer may claim one). */
  ownBlocks?: OwnBlocks;
  source: PeerSource;
  ip: Ip;
  ns: Netns;
  /** Sets up (or removes) egress masquerade; run at every kernel read. Returns what is in place. */
  egress?: EgressStep;
  log: Logger;
  now: () => number;
}

interface LocalEnd {
  address: string;
  family: Family;
  dev?: string;
}

export interface SyncStats {
  syncs: number;
  failures: number;
  lastSync: string | null;
  lastError: string | null;
  lastChanges: number;
  lastDurationMs: number;
}

export class ClusterController {
  readonly #deps: ClusterControllerDeps;
  #peers: readonly Peer[] | undefined;
  /** What the kernel holds of Ferry's, as of the last read plus what ferryd changed since. */
  #have: Entries | undefined;
  /** The next sync reads the kernel first (at start, every resyncSec, after a failure or a new device). */
  #readDue = true;
  #planner: Planner | undefined;
  /** The VXLAN device was checked since the last kernel read. */
  #deviceChecked = false;
  /** What the kernel refused, by kind and key, until a later change of that entry succeeds. */
  readonly #refused = new Map<string, Refused>();
  readonly #syncs = new CoalescedRun(
    async () => {
      if (this.#peers !== undefined) await this.#syncOnce(this.#peers);
    },
    () => this.#stopped,
  );
  #stopped = false;
  #timer: NodeJS.Timeout | undefined;
  #local: LocalEnd | undefined;
  #lookedWithPeers = false;
  #plannedFamily: Family | undefined;
  #egress: string | undefined;
  readonly stats: SyncStats = {
    syncs: 0,
    failures: 0,
    lastSync: null,
    lastError: null,
    lastChanges: 0,
    lastDurationMs: 0,
  };

  constructor(deps: ClusterControllerDeps) {
    this.#deps = deps;
  }

  get config(): ClusterConfig {
    return this.#deps.config;
  }

  get source(): PeerSource {
    return this.#deps.source;
  }

  get peers(): readonly Peer[] {
    return this.#peers ?? [];
  }

  /** The plan for the last view applied; undefined before the first sync. */
  get planner(): Planner | undefined {
    return this.#planner;
  }

  get refused(): Refused[] {
    return [...this.#refused.values()];
  }

  /** The VXLAN device, when routing is vxlan. */
  get device(): string | undefined {
    return this.#deps.config.routing === 'vxlan' ? this.#deps.config.vxlan.device : undefined;
  }

  get local(): { address: string; family: Family } | undefined {
    return this.#local;
  }

  /** What egress is set to after the last kernel read ("masquerade (nft)", "off"); undefined before. */
  get egress(): string | undefined {
    return this.#egress;
  }

  start(): void {
    // A block claimed or released: plan again from the kernel (the VXLAN end and the own CIDRs may move).
    this.#deps.ownBlocks?.onChange(() => {
      this.#readDue = true;
      this.#planner = undefined;
      void this.syncSoon();
    });
    this.#deps.source.start((peers) => {
      this.#peers = peers;
      void this.syncSoon();
    });
    const every = this.#deps.config.resyncSec * 1000;
    this.#timer = setInterval(() => {
      this.#readDue = true;
      void this.syncSoon();
    }, every);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    await this.#deps.source.stop();
    await this.#syncs.idle();
  }

  /** Resolves when no sync is running or asked for (tests and benches wait for a view to land). */
  idle(): Promise<void> {
    return this.#syncs.idle();
  }

  /** Starts a sync, or asks the running one to go again; resolves when the node is in step. */
  syncSoon(): Promise<void> {
    return this.#syncs.run();
  }

  async #syncOnce(peers: readonly Peer[]): Promise<void> {
    const { config, ip, ns, log } = this.#deps;
    const started = performance.now();
    try {
      if (this.#readDue) this.#deviceChecked = false;
      const vxlan = config.routing === 'vxlan' ? await this.#ensureDevice(peers) : undefined;
      // After the device: a device just created or re-created needs its entries read again.
      let have = this.#have;
      const fresh = have === undefined || this.#readDue;
      if (have === undefined || fresh) {
        have = await readEntries(ip, ns, this.device);
        this.#have = have;
        this.#readDue = false;
      }
      // A new underlay family means new FDB entries for everyone: plan from scratch.
      const family = vxlan?.underlayFamily;
      if (!this.#planner || this.#plannedFamily !== family) {
        this.#planner = new Planner({
          routing: config.routing,
          ownPodCIDRs: [...this.#deps.ownPodCIDRs, ...(this.#deps.ownBlocks?.cidrs() ?? [])],
          ...(vxlan ? { vxlan } : {}),
        });
        this.#plannedFamily = family;
      }
      const planner = this.#planner;
      // Without a local end there is no overlay yet: plan nothing rather than routes into nowhere.
      const touched = planner.update(config.routing === 'vxlan' && !vxlan ? [] : peers);
      const changes = fresh ? diff(have, planner.entries) : diffTouched(have, planner.entries, touched);
      const n = changeCount(changes);
      if (fresh) this.#refused.clear();
      const refused = n > 0 ? await applyChanges(ip, ns, this.device, changes, have) : [];
      for (const r of changes.routes.put.concat(changes.routes.del)) this.#refused.delete(`route\t${r.dst}`);
      for (const [k] of changes.neighbours.put.concat(changes.neighbours.del)) this.#refused.delete(`neighbour\t${k}`);
      for (const [k] of changes.fdb.put.concat(changes.fdb.del)) this.#refused.delete(`fdb\t${k}`);
      for (const r of refused) this.#refused.set(`${r.kind}\t${r.key}`, r);
      // After the routes: a firewall that fails must not hold up routing.
      if (fresh && this.#deps.egress) this.#egress = await this.#deps.egress();
      this.stats.syncs++;
      this.stats.lastSync = new Date(this.#deps.now()).toISOString();
      this.stats.lastError = null;
      this.stats.lastChanges = n;
      this.stats.lastDurationMs = performance.now() - started;
      const level = n > 0 || refused.length > 0 ? 'info' : 'debug';
      log[level](
        {
          peers: peers.length,
          changes: n,
          refused: refused.length,
          fromKernel: fresh,
          ms: Math.round(this.stats.lastDurationMs),
        },
        'cluster routes synced',
      );
      for (const r of refused)
        log.warn({ kind: r.kind, key: r.key, reason: r.reason }, 'kernel refused a cluster entry');
    } catch (err) {
      this.stats.failures++;
      this.stats.lastError = (err as Error).message;
      // Read the kernel again next time: a failed batch may have applied part of its lines.
      this.#readDue = true;
      log.error({ err }, 'cluster route sync failed');
    }
  }

  /** Creates or checks the VXLAN device; undefined until the underlay's local end is known. */
  async #ensureDevice(peers: readonly Peer[]): Promise<{ device: string; underlayFamily: Family } | undefined> {
    const { config, ip, ns, log } = this.#deps;
    let local = this.#local;
    // Found before any peer existed (cluster.nodeAddresses alone): the underlay device, hence the MTU, is
    // unknown. Look once more when the first peers arrive, and check the device again with its MTU.
    if (!local?.dev && (!local || (peers.length > 0 && !this.#lookedWithPeers))) {
      this.#lookedWithPeers = peers.length > 0;
      const found = await this.#findLocal(peers);
      if (local && found?.dev) this.#deviceChecked = false;
      local = found ?? local;
    }
    if (!local) return undefined;
    this.#local = local;
    if (this.#deviceChecked) return { device: config.vxlan.device, underlayFamily: local.family };
    const mtu = config.vxlan.mtu ?? (await this.#underlayMtu(local.dev, local.family));
    // One VTEP address per family, as the peers compute it (plan.ts vtepOf).
    const blocks = this.#deps.ownBlocks?.cidrs() ?? [];
    const addresses = ([4, 6] as const).flatMap((family) => {
      const c = vtepOf(this.#deps.ownPodCIDRs, blocks, family);
      return c ? [`${vtepAddress(c)}/${c.bits}`] : [];
    });
    const outcome = await ensureVxlanDevice(
      ip,
      ns,
      {
        name: config.vxlan.device,
        vni: config.vxlan.vni,
        port: config.vxlan.port,
        mac: vtepMac(config.nodeName ?? ''),
        local: local.address,
        ...(mtu ? { mtu } : {}),
      },
      addresses,
    );
    this.#deviceChecked = true;
    if (outcome !== 'kept') {
      log.info({ device: config.vxlan.device, outcome, local: local.address, mtu }, 'VXLAN device set up');
      // A new device has none of the old neighbour and FDB entries.
      this.#readDue = true;
    }
    return { device: config.vxlan.device, underlayFamily: local.family };
  }

  /**
   * The underlay's local end: cluster.nodeAddresses (IPv4 first), else the source address of the
   * route to a peer; and the device that route leaves by (for the MTU). Undefined with no peers yet.
   */
  async #findLocal(peers: readonly Peer[]): Promise<LocalEnd | undefined> {
    const configured = this.#deps.config.nodeAddresses;
    const pick = configured?.find((a) => familyOf(a) === 4) ?? configured?.[0];
    const chosen = pick === undefined ? undefined : canonicalAddress(pick);
    for (const family of chosen ? [familyOf(chosen)] : ([4, 6] as const)) {
      for (const p of peers) {
        const a = p.addresses.find((x) => familyOf(x) === family);
        const r = a ? await this.#deps.ip.routeTo(this.#deps.ns, a) : undefined;
        const address = chosen ?? r?.prefsrc;
        if (r && address) return { address, family, dev: r.dev };
      }
    }
    return chosen ? { address: chosen, family: familyOf(chosen) } : undefined;
  }

  async #underlayMtu(dev: string | undefined, family: Family): Promise<number | undefined> {
    if (!dev) return undefined;
    const link = await this.#deps.ip.getLink(this.#deps.ns, dev);
    return link?.mtu ? link.mtu - (family === 4 ? 50 : 70) : undefined;
  }

  /** The kernel's Ferry entries now (for operators: what is present, missing, stale). */
  readKernel(): Promise<Entries> {
    return readEntries(this.#deps.ip, this.#deps.ns, this.device);
  }
}
