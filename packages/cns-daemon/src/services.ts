/**
 * Builds ferryd's services on an open database: the one place that knows how they depend on each
 * other. startDaemon adds sockets and timers; route tests use it with inject().
 */

import { Ip, Iproute2 } from '@ferry/net';
import { nodeRunner } from '@ferry/net/node-runner';
import { defaultCommitJournalOf } from '@ferry/shared-types/config/defaults';
import type { Logger } from 'pino';
import type { AppDeps } from './app';
import { buildCluster } from './cluster/build';
import type { ClusterController } from './cluster/controller';
import type { createKubePeerSource } from './cluster/kube-source';
import { registerClusterMetrics } from './cluster/metrics';
import type { FerrydConfig } from './config';
import { Inventory } from './devices/inventory';
import { NodeChecks } from './doctor/node-checks';
import { Attachments } from './endpoints/attachments';
import { JournalDir } from './endpoints/commit-journal';
import { Ipam } from './ipam/ipam';
import { Lifecycle } from './lifecycle';
import { Metrics } from './metrics';
import { buildNodeState } from './node-state/build';
import { Operator } from './operator';
import { Drainer } from './queue/drainer';
import { readinessOf } from './readiness';
import { Reconciler } from './reconcile/reconciler';
import { StaleEndpoints } from './reconcile/stale-endpoints';
import { StorageHealth } from './storage/health';
import { type Db, probeWrite } from './store/db';
import { DeviceStore } from './store/devices';
import { EndpointStore } from './store/endpoints';
import { GroupCommit } from './store/group-commit';
import { Invariants } from './store/invariants';
import { PoolStore } from './store/pools';

export interface Services {
  deps: AppDeps;
  /** Cluster networking, when the config has a `cluster` section; startDaemon starts it. */
  cluster?: ClusterController;
  reconciler: Reconciler;
  drainer: Drainer;
}

export interface ServiceOptions {
  log: Logger;
  now: () => number;
  defaultMetrics: boolean;
  /** The Kubernetes peer source, loaded when `cluster.kubernetes` is set (cluster/build.ts says why). */
  kubeSource?: typeof createKubePeerSource;
}

export function buildServices(config: FerrydConfig, db: Db, opts: ServiceOptions): Services {
  const { log, now } = opts;
  const storage = new StorageHealth({
    database: config.database,
    log,
    now,
    probeWrite: () => probeWrite(db),
    count: (operation, cause) => metrics.storageErrors.inc({ operation, cause }),
    // Queued DELs that waited for the disk are applied now rather than at the next rescan.
    onRecovered: () => drainer.drainSoon(),
  });
  const endpoints = new EndpointStore(db);
  const pools = new PoolStore(db);
  const devices = new DeviceStore(db);
  const ipam = new Ipam(pools, config);
  const lifecycle = new Lifecycle();
  const attachments = new Attachments({
    db,
    endpoints,
    devices,
    ipam,
    now,
    journal: new JournalDir(config.commitJournal ?? defaultCommitJournalOf(config.deleteQueue)),
    log,
    // After the transaction: the pass shows freed devices home now rather than at the next period.
    onDevicesReleased: () => setImmediate(() => reconciler.runSoon()),
    onJournalSettled: ({ promoted, discarded }) => {
      metrics.journalEntries.inc({ outcome: 'promoted' }, promoted);
      metrics.journalEntries.inc({ outcome: 'discarded' }, discarded);
    },
  });
  const ip = new Ip(new Iproute2(nodeRunner));
  const inventory = new Inventory({ db, devices, ip, config: config.delegatedDevices, log, now });
  const drainer = new Drainer({ dir: config.deleteQueue, attachments, storage, log, now });
  const stale = new StaleEndpoints({ endpoints, attachments, log, graceMs: config.reconcile.staleGraceSec * 1000 });
  // The node as second source of truth (node-state/): adoption and the reboot check run in each pass.
  const nodeState = buildNodeState({
    db,
    database: config.database,
    bootIdPath: config.bootIdPath,
    endpoints,
    pools,
    devices,
    ipam,
    attachments,
    ip,
    log,
    now,
  });
  const reconciler = new Reconciler({
    attachments,
    ipam,
    inventory,
    drainer,
    stale,
    boot: nodeState.boot,
    adoption: nodeState.adoption,
    storage,
    log,
    now,
    intervalMs: config.reconcile.intervalSec * 1000,
  });
  const cluster = config.cluster ? buildCluster(config, config.cluster, ip, log, now, opts.kubeSource) : undefined;
  const invariants = new Invariants(db, ipam);
  const operator = new Operator({
    endpoints,
    pools,
    ipam,
    attachments,
    invariants,
    inventory,
    drainer,
    nodeChecks: new NodeChecks({
      endpoints,
      devices,
      drainer,
      ip,
      nodeState: () => nodeState.violations(),
      ...(cluster ? { cluster } : {}),
    }),
    ...(cluster ? { cluster } : {}),
    now,
    reconcile: () => reconciler.runOnce(),
  });
  const specs = new Map(ipam.networks().flatMap((n) => n.pools.map((p) => [p.poolId, p.spec] as const)));
  const metrics = new Metrics(
    {
      interfaceCounts: () => endpoints.countInterfaces(),
      addressCounts: () =>
        pools.countByState(now()).flatMap((c) => {
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
    },
    { defaultMetrics: opts.defaultMetrics },
  );
  if (cluster) registerClusterMetrics(metrics.registry, cluster);
  nodeState.registerMetrics(metrics.registry);
  const ping = () => {
    db.prepare('SELECT 1').get();
  };
  return {
    deps: { attachments, writes: new GroupCommit(db), ipam, operator, lifecycle, storage, metrics, log, ping },
    reconciler,
    drainer,
    ...(cluster ? { cluster } : {}),
  };
}
