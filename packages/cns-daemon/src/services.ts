/**
 * Builds ferryd's services on an open database: the one place that knows how they depend on each
 * other. They are built in that order, each from what is above it, every builder from one context (the
 * config, the database, its stores, the metrics, the clock and the log) and the parts it needs. Five
 * events flow back up against that order: they are subscribed in one block, once both ends exist.
 * startDaemon adds sockets and timers; route tests use it with inject().
 */

import { Ip, Iproute2, LinkMonitor, SELF } from '@ferry/net';
import { nodeRunner, nodeSpawner } from '@ferry/net/node-runner';
import type { Violation } from '@ferry/shared-types/api/operator';
import { defaultCommitJournalOf } from '@ferry/shared-types/config/defaults';
import { DEFAULT_RECLAIM_SEC, type FerrydConfig } from '@ferry/shared-types/config/ferryd';
import type { Logger } from 'pino';
import type { AppDeps } from './app';
import { Attachments } from './attachments/attachments';
import { JournalDir } from './attachments/commit-journal';
import { Tenancy } from './attachments/tenancy';
import { buildCluster } from './cluster/build';
import type { ClusterController } from './cluster/controller';
import type { createKubePeerSource } from './cluster/kube-source';
import { registerClusterMetrics } from './cluster/metrics';
import type { buildDevicePlugin, DevicePlugin } from './device-plugin/build';
import { servedGroupsOf } from './device-plugin/served';
import { deviceInfoAt } from './devices/device-info';
import { GroupKinds } from './devices/device-kind';
import { Inventory } from './devices/inventory';
import { LinkHealth } from './devices/link-health';
import { PciAddresses } from './devices/pci';
import { Sysfs } from './devices/sysfs';
import { NodeChecks } from './doctor/node-checks';
import type { BlockServices, buildBlockServices } from './ipam/blocks/build';
import { pendingPodsOf } from './ipam/blocks/demand';
import { Ipam } from './ipam/ipam';
import { Lifecycle } from './lifecycle';
import { type MetricSources, Metrics } from './metrics';
import { buildNodeState, type NodeState } from './node-state/build';
import { Operator, type OperatorDeps } from './operator';
import type { buildPodServices, PodServices } from './pods/build';
import { registerPodMetrics } from './pods/metrics';
import { Drainer } from './queue/drainer';
import { readinessOf } from './readiness';
import { Reconciler, type ReconcilerDeps } from './reconcile/reconciler';
import { StaleEndpoints } from './reconcile/stale-endpoints';
import { StorageHealth } from './storage/health';
import { AttachmentStore } from './store/attachments';
import { BlockStore } from './store/blocks';
import { type Db, probeWrite } from './store/db';
import { DeviceStore } from './store/devices';
import { GroupCommit } from './store/group-commit';
import { Invariants } from './store/invariants';
import { PoolStore } from './store/pools';

/** A part that runs beside the API: started once ferryd is ready, stopped before the store closes. */
export interface Background {
  start(): void;
  stop(): Promise<void>;
}

export interface Services {
  deps: AppDeps;
  /** This node's pods, when `cluster.kubernetes.pods` is set (also in `background`: startDaemon starts it). */
  pods?: PodServices;
  /** The kubelet's device plugin, when `devicePlugin` is set (also in `background`). */
  devicePlugin?: DevicePlugin;
  reconciler: Reconciler;
  drainer: Drainer;
  /** The optional parts the config asks for (cluster networking); startDaemon starts them. */
  background: Background[];
}

export interface ServiceOptions {
  log: Logger;
  now: () => number;
  defaultMetrics: boolean;
  /** The Kubernetes peer source, loaded when `cluster.kubernetes` is set (cluster/build.ts says why). */
  kubeSource?: typeof createKubePeerSource;
  /** The pod services, loaded when `cluster.kubernetes.pods` is set (for the same reason). */
  podServices?: typeof buildPodServices;
  /** The device plugin, loaded when `devicePlugin` is set (it brings gRPC). */
  devicePlugin?: typeof buildDevicePlugin;
  /** Cluster IPAM, loaded when a network's pool has `blocks` (it brings the Kubernetes client). */
  blockServices?: typeof buildBlockServices;
}

interface Stores {
  attachmentStore: AttachmentStore;
  pools: PoolStore;
  devices: DeviceStore;
  blocks: BlockStore;
}

/** What every builder below reads. */
interface Context {
  config: FerrydConfig;
  db: Db;
  stores: Stores;
  /** Counters first: every part counts into them as it works. */
  metrics: Metrics;
  opts: ServiceOptions;
}

/** What decides which device a pod gets (PCI addresses, tenancy, the kubelet's groups) and the inventory. */
interface DeviceParts {
  sysfs: Sysfs;
  pci: PciAddresses;
  tenancy: Tenancy;
  served: ReadonlySet<string>;
  inventory: Inventory;
}

export function buildServices(config: FerrydConfig, db: Db, opts: ServiceOptions): Services {
  const { log, now } = opts;
  const ctx: Context = {
    config,
    db,
    stores: storesOf(db),
    metrics: new Metrics({ defaultMetrics: opts.defaultMetrics }),
    opts,
  };
  const storage = storageHealthOf(ctx);
  const ipam = new Ipam(ctx.stores.pools, config);
  const ip = new Ip(new Iproute2(nodeRunner));
  const devices = devicePartsOf(ctx, ip);
  const { inventory } = devices;
  const attachments = attachmentsOf(ctx, ipam, devices);
  const drainer = new Drainer({ dir: config.deleteQueue, attachments, storage, log, now });
  // The node as second source of truth (node-state/): adoption and the reboot check run in each pass.
  const nodeState = nodeStateOf(ctx, { ipam, attachments, ip });
  const reconciler = reconcilerOf(ctx, { attachments, ipam, inventory, drainer, storage }, nodeState);
  // Cluster IPAM reads what is built after it (the pods scheduled here, the other Nodes' pod CIDRs) when it runs.
  let late: { pods?: PodServices; cluster?: ClusterController } = {};
  const blocks = blockServicesOf(ctx, ipam, () => late, devices.tenancy);
  const routedBlocks = blocks ? { peers: blocks.peers, own: blocks.own } : undefined;
  const cluster = config.cluster
    ? buildCluster(config, config.cluster, ip, log, now, opts.kubeSource, routedBlocks)
    : undefined;
  const devicePlugin = devicePluginOf(ctx, devices);
  const links = linkHealthOf(ctx, inventory, storage);
  const operator = operatorOf(ctx, {
    ipam,
    attachments,
    drainer,
    reconciler,
    ip,
    cluster,
    devicePlugin,
    nodeState,
    devices,
    blockViolations: () => blocks?.manager.violations() ?? [],
  });
  const lifecycle = new Lifecycle();
  ctx.metrics.observe(metricSourcesOf(ctx, { ipam, inventory, drainer, lifecycle, storage }));
  const pods = podsOf(ctx, operator, devices);
  late = { ...(pods ? { pods } : {}), ...(cluster ? { cluster } : {}) };

  // The events that flow back up, each after the transaction or check that raised it:
  // queued DELs that waited for the disk are applied now rather than at the next rescan;
  storage.onRecovered(() => drainer.drainSoon());
  // the pass shows freed devices home now rather than at the next period;
  attachments.onDevicesReleased((released) =>
    setImmediate(() => {
      devicePlugin?.released(released);
      reconciler.runSoon();
    }),
  );
  // a pod's network-status follows each commit or release now rather than at the next resync (the
  // writer reads the records);
  const writer = pods?.statusWriter;
  if (writer) attachments.onPodChanged((pod) => setImmediate(() => writer.report(pod)));
  // the kubelet's device lists (health) follow each inventory scan and each link event it applies;
  if (devicePlugin) inventory.onUpdated(() => devicePlugin.refresh());
  // a delegated device's link events (gone, back, its PF's carrier) are applied to the inventory now, and
  // a rescan follows, rather than waiting for the next pass: they reach the kubelet within a second.
  if (links) links.monitor.onEvent((e) => links.health.on(e));

  if (pods) registerPodMetrics(ctx.metrics.registry, pods);
  if (cluster) registerClusterMetrics(ctx.metrics.registry, cluster);
  blocks?.registerMetrics(ctx.metrics.registry);
  nodeState.registerMetrics(ctx.metrics.registry);
  const writes = new GroupCommit(db);
  const ping = () => void db.prepare('SELECT 1').get();
  const metrics = ctx.metrics;
  return {
    deps: {
      ...{ attachments, writes, ipam, operator, lifecycle, storage, metrics, log, ping, pods, devicePlugin },
      ...(blocks ? { blocks: blocks.manager, claims: blocks.claims } : {}),
    },
    reconciler,
    drainer,
    ...(pods ? { pods } : {}),
    ...(devicePlugin ? { devicePlugin } : {}),
    // The blocks first: routing and ADDs follow what the block manager holds.
    background: [blocks, cluster, pods, devicePlugin, links?.health].filter(
      (part): part is NonNullable<typeof part> => part !== undefined,
    ),
  };
}

function storesOf(db: Db): Stores {
  return {
    attachmentStore: new AttachmentStore(db),
    pools: new PoolStore(db),
    devices: new DeviceStore(db),
    blocks: new BlockStore(db),
  };
}

/**
 * Cluster IPAM, when a network's pool is a range split into blocks: the block manager counts the pods the
 * watch shows on their way as demand, and never claims a block inside another Node's spec.podCIDRs.
 */
function blockServicesOf(
  { config, db, stores, opts }: Context,
  ipam: Ipam,
  late: () => { pods?: PodServices; cluster?: ClusterController },
  tenancy: Tenancy,
): BlockServices | undefined {
  if (!ipam.networks().some((n) => n.pools.some((p) => p.spec.blocks))) return undefined;
  if (!opts.blockServices) throw new Error('a pool has blocks but the cluster IPAM services were not loaded');
  const kubernetes = config.cluster?.kubernetes;
  return opts.blockServices({
    ...(kubernetes?.kubeconfig ? { kubeconfig: kubernetes.kubeconfig } : {}),
    // The config check requires a node name and `kubernetes` with blocks.
    nodeName: config.cluster?.nodeName ?? '',
    reclaimMs: (config.cluster?.reclaimSec ?? DEFAULT_RECLAIM_SEC) * 1000,
    db,
    ipam,
    pools: stores.pools,
    blocks: stores.blocks,
    pendingOf: (network) => {
      const pods = late().pods?.cache.pods() ?? [];
      return pods.length === 0 ? 0 : pendingPodsOf(pods, ipam.network(network).config, stores.attachmentStore);
    },
    foreignPodCIDRs: () => late().cluster?.peers.flatMap((p) => p.podCIDRs) ?? [],
    mayHave: (address, namespace) => tenancy.rangeFor(address, namespace) !== undefined,
    podCache: () => late().pods?.cache,
    staticAddressesHeld: () => stores.attachmentStore.staticAddresses(),
    log: opts.log,
    now: opts.now,
  });
}

function devicePartsOf({ config, db, stores, opts }: Context, ip: Ip): DeviceParts {
  const sysfs = new Sysfs(config.sysfsRoot);
  const pci = new PciAddresses(sysfs);
  const groups = config.delegatedDevices.map((d) => d.group);
  const tenancy = new Tenancy(config.tenancy, groups);
  const served = servedGroupsOf(config);
  const { log, now } = opts;
  const inventory = new Inventory({
    db,
    devices: stores.devices,
    ip,
    config: config.delegatedDevices,
    log,
    now,
    goneGraceSec: config.reconcile.deviceGoneGraceSec,
    pci,
    sysfs,
    served,
  });
  return { sysfs, pci, tenancy, served, inventory };
}

/** The link monitor and what it drives, when there are delegated devices to watch. */
function linkHealthOf(
  { config, opts }: Context,
  inventory: Inventory,
  storage: StorageHealth,
): { monitor: LinkMonitor; health: LinkHealth } | undefined {
  if (config.delegatedDevices.length === 0) return undefined;
  // ferryd's own namespace is the node's: where the devices are when no pod holds them.
  const monitor = new LinkMonitor({ netns: SELF, spawn: nodeSpawner });
  return { monitor, health: new LinkHealth({ inventory, monitor, storage, log: opts.log }) };
}

function storageHealthOf({ config, db, metrics, opts }: Context): StorageHealth {
  return new StorageHealth({
    database: config.database,
    log: opts.log,
    now: opts.now,
    probeWrite: () => probeWrite(db),
    count: (operation, cause) => metrics.storageErrors.inc({ operation, cause }),
  });
}

function attachmentsOf({ config, db, stores, metrics, opts }: Context, ipam: Ipam, devices: DeviceParts): Attachments {
  const { pci, tenancy, served } = devices;
  return new Attachments({
    db,
    attachmentStore: stores.attachmentStore,
    devices: stores.devices,
    ipam,
    pci,
    tenancy,
    served,
    kinds: new GroupKinds(config.delegatedDevices),
    now: opts.now,
    journal: new JournalDir(config.commitJournal ?? defaultCommitJournalOf(config.deleteQueue)),
    log: opts.log,
    onJournalSettled: ({ promoted, discarded }) => {
      metrics.journalEntries.inc({ outcome: 'promoted' }, promoted);
      metrics.journalEntries.inc({ outcome: 'discarded' }, discarded);
    },
  });
}

function reconcilerOf(
  { config, stores, opts }: Context,
  parts: Pick<ReconcilerDeps, 'attachments' | 'ipam' | 'inventory' | 'drainer' | 'storage'>,
  { boot, adoption }: NodeState,
): Reconciler {
  const { log, now } = opts;
  const graceMs = config.reconcile.staleGraceSec * 1000;
  const stale = new StaleEndpoints({
    attachmentStore: stores.attachmentStore,
    attachments: parts.attachments,
    log,
    graceMs,
  });
  return new Reconciler({ ...parts, boot, adoption, stale, log, now, intervalMs: config.reconcile.intervalSec * 1000 });
}

function operatorOf(
  { db, stores, opts }: Context,
  parts: Pick<OperatorDeps, 'ipam' | 'attachments' | 'drainer'> & {
    reconciler: Reconciler;
    ip: Ip;
    cluster: ClusterController | undefined;
    devicePlugin: DevicePlugin | undefined;
    nodeState: NodeState;
    devices: DeviceParts;
    /** Cluster IPAM's conflicts (ipam/blocks/manager.ts). */
    blockViolations: () => Violation[];
  },
): Operator {
  const { ipam, attachments, drainer, reconciler, ip, cluster, devicePlugin, nodeState, blockViolations } = parts;
  const { inventory, tenancy } = parts.devices;
  const { attachmentStore, pools, devices } = stores;
  const inCluster = cluster ? { cluster } : {};
  return new Operator({
    attachmentStore,
    pools,
    ipam,
    attachments,
    tenancy,
    invariants: new Invariants(db, ipam),
    inventory,
    drainer,
    nodeChecks: new NodeChecks({
      attachmentStore,
      devices,
      drainer,
      ip,
      nodeState: () => [...nodeState.violations(), ...blockViolations()],
      ...inCluster,
      ...(devicePlugin ? { devicePlugin } : {}),
    }),
    ...inCluster,
    now: opts.now,
    reconcile: () => reconciler.runOnce(),
  });
}

function nodeStateOf(
  { config, db, stores, opts }: Context,
  parts: { ipam: Ipam; attachments: Attachments; ip: Ip },
): NodeState {
  const { attachmentStore, pools, devices } = stores;
  const { database, bootIdPath } = config;
  return buildNodeState({ db, database, bootIdPath, attachmentStore, pools, devices, ...parts, ...opts });
}

/** What the state gauges read at each scrape. */
function metricSourcesOf(
  { stores, opts }: Context,
  parts: { ipam: Ipam; inventory: Inventory; drainer: Drainer; lifecycle: Lifecycle; storage: StorageHealth },
): MetricSources {
  const { ipam, inventory, drainer, lifecycle, storage } = parts;
  const { now } = opts;
  const specs = new Map(ipam.networks().flatMap((n) => n.pools.map((p) => [p.poolId, p.spec] as const)));
  return {
    interfaceCounts: () => stores.attachmentStore.countInterfaces(),
    addressCounts: () =>
      stores.pools.countByState(now()).flatMap((c) => {
        const spec = specs.get(c.poolId);
        return spec ? [{ network: spec.network, family: spec.family, state: c.state, n: c.n }] : [];
      }),
    poolSizes: () => [...specs.values()].map((s) => ({ network: s.network, family: s.family, size: Number(s.size) })),
    deviceCounts: () => {
      const counts = new Map<string, number>();
      for (const d of inventory.list())
        counts.set(`${d.group}\t${d.state}`, (counts.get(`${d.group}\t${d.state}`) ?? 0) + 1);
      return [...counts].map(([k, n]) => {
        const [group = '', state = ''] = k.split('\t');
        return { group, state, n };
      });
    },
    queue: () => {
      const q = drainer.status();
      return {
        pending: q.pending.length,
        failed: q.failed.length,
        oldestAgeSec: q.oldestAgeSec,
        applied: drainer.appliedTotal,
      };
    },
    ready: () => readinessOf(lifecycle, storage).ready,
  };
}

/** This node's pods, when configured: the status writer projects ferryd's records (the operator's view). */
function podsOf({ config, opts }: Context, operator: Operator, devices: DeviceParts): PodServices | undefined {
  const kubernetes = config.cluster?.kubernetes;
  if (!kubernetes?.pods) return undefined;
  if (!opts.podServices) throw new Error('cluster.kubernetes.pods is set but the pod services were not loaded');
  return opts.podServices({
    ...(kubernetes.kubeconfig ? { kubeconfig: kubernetes.kubeconfig } : {}),
    // The config check requires a node name whenever `kubernetes` is set.
    nodeName: config.cluster?.nodeName ?? '',
    config: kubernetes.pods,
    records: (pod) =>
      operator.listEndpoints(pod ? { namespace: pod.namespace, pod: pod.name } : {}).flatMap((e) => e.interfaces),
    deviceInfoOf: ({ mac, pciAddress }) => {
      const address = pciAddress ?? (mac ? devices.pci.pciOf(mac) : undefined);
      return address ? deviceInfoAt(devices.sysfs, address) : undefined;
    },
    resyncMs: config.reconcile.intervalSec * 1000,
    log: opts.log,
  });
}

/** The device plugin, when configured: its device lists are the inventory's. */
function devicePluginOf({ config, metrics, opts }: Context, devices: DeviceParts): DevicePlugin | undefined {
  if (!config.devicePlugin) return undefined;
  if (!opts.devicePlugin) throw new Error('devicePlugin is set but the device plugin was not loaded');
  const { served, inventory, sysfs } = devices;
  return opts.devicePlugin({
    config: config.devicePlugin,
    served,
    devices: () => inventory.list(),
    pciFunctionOf: (address) => sysfs.function(address),
    now: opts.now,
    log: opts.log,
    registry: metrics.registry,
  });
}
