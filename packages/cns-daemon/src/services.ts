/**
 * Builds ferryd's services on an open database: the one place that knows how they depend on each
 * other. startDaemon adds sockets and timers; route tests use it with inject().
 */
import type { Logger } from 'pino';
import type { AppDeps } from './app';
import type { FerrydConfig } from './config';
import { Attachments } from './endpoints/attachments';
import { Ipam } from './ipam/ipam';
import { Lifecycle } from './lifecycle';
import { Metrics } from './metrics';
import { Operator } from './operator';
import { Reconciler } from './reconcile/reconciler';
import type { Db } from './store/db';
import { EndpointStore } from './store/endpoints';
import { Invariants } from './store/invariants';
import { PoolStore } from './store/pools';

export interface Services {
  deps: AppDeps;
  reconciler: Reconciler;
  stores: { endpoints: EndpointStore; pools: PoolStore };
}

export interface ServiceOptions {
  log: Logger;
  now: () => number;
  defaultMetrics: boolean;
}

export function buildServices(config: FerrydConfig, db: Db, opts: ServiceOptions): Services {
  const { log, now } = opts;
  const endpoints = new EndpointStore(db);
  const pools = new PoolStore(db);
  const ipam = new Ipam(pools, config);
  const lifecycle = new Lifecycle();
  const attachments = new Attachments({ db, endpoints, ipam, now });
  const reconciler = new Reconciler({ ipam, log, now, intervalMs: config.reconcile.intervalSec * 1000 });
  const invariants = new Invariants(db, ipam);
  const operator = new Operator({
    endpoints,
    pools,
    ipam,
    attachments,
    invariants,
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
      ready: () => lifecycle.isReady,
    },
    { defaultMetrics: opts.defaultMetrics },
  );
  const ping = () => {
    db.prepare('SELECT 1').get();
  };
  return {
    deps: { attachments, ipam, operator, lifecycle, metrics, log, ping },
    reconciler,
    stores: { endpoints, pools },
  };
}
