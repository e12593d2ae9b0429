/** The pod watch's and the network-status writer's metrics, read from them at scrape time. */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { PodServices } from './build';

export function registerPodMetrics(registry: Registry, pods: PodServices): void {
  const registers = [registry];
  new Gauge({
    name: 'ferry_pods_watched',
    help: "Pods of this node in ferryd's pod cache (the watch on spec.nodeName)",
    registers,
    collect() {
      this.set(pods.status().pods);
    },
  });
  // Counters kept by the cache, the informer and the writer, copied at scrape time (they only grow).
  new Counter({
    name: 'ferry_pod_watch_restarts_total',
    help: 'Restarts of the pod watch (410 Gone, a dropped connection, the API server away)',
    registers,
    collect() {
      this.reset();
      this.inc(pods.status().watchRestarts);
    },
  });
  new Counter({
    name: 'ferry_pod_lookups_total',
    help: 'Questions about one pod, by how they were answered: cache, api (a GET), absent (the API server has no such pod), unavailable (no answer in time: code 11)',
    labelNames: ['result'],
    registers,
    collect() {
      this.reset();
      for (const [result, n] of Object.entries(pods.cache.counts)) this.inc({ result }, n);
    },
  });
  new Counter({
    name: 'ferry_pod_nic_refusals_total',
    help: "ADDs whose delegated NICs ferryd refused, by reason: malformed (the pod's ferry.dev/nics does not parse, or names its primary interface), unknown (a network, group or device this node does not have), not-allowed (not bound to the pod's namespace: a group, a device, a static address), unavailable (no free device, a device held by another pod, an address in use)",
    labelNames: ['reason'],
    registers,
    collect() {
      this.reset();
      for (const [reason, n] of Object.entries(pods.refusals.counts)) this.inc({ reason }, n);
    },
  });
  const writer = pods.statusWriter;
  if (!writer) return;
  new Counter({
    name: 'ferry_network_status_writes_total',
    help: 'network-status annotation writes by outcome: written, conflict (the pod changed since it was read; redone), failed (retried with back-off), gone (the pod was deleted first)',
    labelNames: ['result'],
    registers,
    collect() {
      this.reset();
      const c = writer.counts;
      this.inc({ result: 'written' }, c.written);
      this.inc({ result: 'conflict' }, c.conflicts);
      this.inc({ result: 'failed' }, c.failed);
      this.inc({ result: 'gone' }, c.gone);
    },
  });
  // One look at the queue serves both gauges (as the delete queue's do).
  const oldest = new Gauge({
    name: 'ferry_network_status_oldest_pending_seconds',
    help: 'How long the pod waiting longest for its network-status write has waited (0 when none waits)',
    registers: [],
  });
  new Gauge({
    name: 'ferry_network_status_pending',
    help: 'Pods whose network-status annotation is waiting to be written',
    registers,
    collect() {
      const p = writer.pending();
      this.set(p.pods);
      oldest.set(p.oldestSec);
    },
  });
  registry.registerMetric(oldest);
}
