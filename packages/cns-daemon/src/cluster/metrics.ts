/** Cluster networking's metrics, read from the controller and its PeerSource at scrape time. */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { ClusterController } from './controller';

export function registerClusterMetrics(registry: Registry, c: ClusterController): void {
  const registers = [registry];
  new Gauge({
    name: 'ferry_cluster_peers',
    help: 'Other nodes known to ferryd, by whether every entry for them could be planned',
    labelNames: ['state'],
    registers,
    collect() {
      const unroutable = new Set(c.planner?.unroutable.map((u) => u.peer));
      this.set({ state: 'routable' }, c.peers.filter((p) => !unroutable.has(p.name)).length);
      this.set({ state: 'unroutable' }, unroutable.size);
    },
  });
  new Gauge({
    name: 'ferry_cluster_entries',
    help: 'Routes, neighbour and FDB entries ferryd programs for its peers',
    labelNames: ['kind'],
    registers,
    collect() {
      const e = c.planner?.entries;
      this.set({ kind: 'route' }, e?.routes.size ?? 0);
      this.set({ kind: 'neighbour' }, e?.neighbours.size ?? 0);
      this.set({ kind: 'fdb' }, e?.fdb.size ?? 0);
    },
  });
  // Counters kept by the controller and the source, copied at scrape time (they only grow).
  new Counter({
    name: 'ferry_cluster_route_syncs_total',
    help: 'Route syncs (a peer view applied to the kernel), by result',
    labelNames: ['result'],
    registers,
    collect() {
      this.reset();
      this.inc({ result: 'ok' }, c.stats.syncs);
      this.inc({ result: 'error' }, c.stats.failures);
    },
  });
  new Gauge({
    name: 'ferry_cluster_refused_entries',
    help: 'Entries the kernel refused and that no later sync has programmed (a next hop that is not on-link, say)',
    registers,
    collect() {
      this.set(c.refused.length);
    },
  });
  new Gauge({
    name: 'ferry_cluster_last_sync_duration_seconds',
    help: 'How long the last route sync took',
    registers,
    collect() {
      this.set(c.stats.lastDurationMs / 1000);
    },
  });
  new Gauge({
    name: 'ferry_cluster_last_sync_timestamp_seconds',
    help: 'When the last route sync finished (Unix time; 0 before the first)',
    registers,
    collect() {
      this.set(c.stats.lastSync ? Date.parse(c.stats.lastSync) / 1000 : 0);
    },
  });
  new Counter({
    name: 'ferry_cluster_watch_restarts_total',
    help: "Restarts of the peer source's watch (410 Gone, a dropped connection, the API server away)",
    registers,
    collect() {
      this.reset();
      this.inc(c.source.status().watchRestarts);
    },
  });
}
