/**
 * Prometheus metrics: ferry's own prefixed `ferry_`, the process and Node.js runtime metrics under the
 * names prom-client and every stock dashboard give them (`process_*`, `nodejs_*`). One Registry per app,
 * so tests can build several apps in one process. The counters exist from construction, so every part of
 * ferryd can count into them as it is built; the state gauges are computed at scrape time from the parts
 * (observe, once they all exist), never kept in memory.
 */
import { Code } from '@ferry/shared-types/errors';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { collectProcessMetrics } from './process-metrics';

export interface MetricSources {
  interfaceCounts(): { network: string; nicType: string; n: number }[];
  addressCounts(): { network: string; family: number; state: string; n: number }[];
  poolSizes(): { network: string; family: number; size: number }[];
  deviceCounts(): { group: string; state: string; n: number }[];
  /** The delete queue now, and the entries applied since start (a count that only grows). */
  queue(): { pending: number; failed: number; oldestAgeSec: number; applied: number };
  ready(): boolean;
}

export class Metrics {
  readonly registry = new Registry();
  readonly requestDuration: Histogram<'method' | 'route' | 'status_code'>;
  readonly errors: Counter<'code'>;
  readonly allocations: Counter<'network'>;
  readonly releases: Counter<'network'>;
  readonly storageErrors: Counter<'operation' | 'cause'>;
  readonly journalEntries: Counter<'outcome'>;

  constructor(opts: { defaultMetrics?: boolean } = {}) {
    const registers = [this.registry];
    if (opts.defaultMetrics) collectProcessMetrics(this.registry);
    this.requestDuration = new Histogram({
      name: 'ferry_http_request_duration_seconds',
      help: 'ferryd API request duration',
      labelNames: ['method', 'route', 'status_code'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers,
    });
    this.errors = new Counter({
      name: 'ferry_errors_total',
      help: 'Errors answered by ferryd, by CNI error code',
      labelNames: ['code'],
      registers,
    });
    // Every code is a series from the start: an alert on increase() sees the first error, which a series
    // born at 1 would hide (increase() needs two samples).
    for (const code of Object.values(Code)) this.errors.inc({ code: String(code) }, 0);
    this.allocations = new Counter({
      name: 'ferry_allocations_total',
      help: 'Attachments allocated (new, not idempotent repeats)',
      labelNames: ['network'],
      registers,
    });
    this.releases = new Counter({
      name: 'ferry_releases_total',
      help: 'Attachments released',
      labelNames: ['network'],
      registers,
    });
    this.storageErrors = new Counter({
      name: 'ferry_storage_errors_total',
      help: 'Writes that failed because the disk is full, read-only or failing, by operation and cause (full, read-only, io)',
      labelNames: ['operation', 'cause'],
      registers,
    });
    this.journalEntries = new Counter({
      name: 'ferry_commit_journal_entries_total',
      help: 'Commit-journal entries ferryd took, by outcome: promoted to a commit, or discarded (a stale generation, a released attachment, an unreadable file: each logged); a rising discarded count means ADDs that succeeded without their record',
      labelNames: ['outcome'],
      registers,
    });
  }

  /** Registers the state gauges, read from `sources` at every scrape. */
  observe(sources: MetricSources): void {
    const registers = [this.registry];
    new Gauge({
      name: 'ferry_endpoints',
      help: 'Pod interfaces ferryd holds state for',
      labelNames: ['network', 'nic_type'],
      registers,
      collect() {
        this.reset();
        for (const c of sources.interfaceCounts()) this.set({ network: c.network, nic_type: c.nicType }, c.n);
      },
    });
    new Gauge({
      name: 'ferry_addresses',
      help: 'Addresses by state (Available addresses are not counted here; see ferry_pool_size)',
      labelNames: ['network', 'family', 'state'],
      registers,
      collect() {
        this.reset();
        for (const c of sources.addressCounts()) {
          this.set({ network: c.network, family: String(c.family), state: c.state }, c.n);
        }
      },
    });
    new Gauge({
      name: 'ferry_pool_size',
      help: 'Allocatable addresses per pool (range minus exclusions)',
      labelNames: ['network', 'family'],
      registers,
      collect() {
        this.reset();
        for (const p of sources.poolSizes()) this.set({ network: p.network, family: String(p.family) }, p.size);
      },
    });
    new Gauge({
      name: 'ferry_devices',
      help: 'Delegated devices by group and state (free, assigned, missing)',
      labelNames: ['group', 'state'],
      registers,
      collect() {
        this.reset();
        for (const d of sources.deviceCounts()) this.set({ group: d.group, state: d.state }, d.n);
      },
    });
    // One look at the queue (it reads every entry file) serves the three: the first one's collect sets
    // the others, which prom-client reads after it (in the order they were registered).
    let applied = 0;
    const oldest = new Gauge({
      name: 'ferry_delete_queue_oldest_age_seconds',
      help: 'Age of the oldest pending delete-queue entry',
      registers: [],
    });
    new Gauge({
      name: 'ferry_delete_queue',
      help: 'Delete-queue entries waiting: pending, failed (set aside)',
      labelNames: ['state'],
      registers,
      collect() {
        const q = sources.queue();
        this.set({ state: 'pending' }, q.pending);
        this.set({ state: 'failed' }, q.failed);
        oldest.set(q.oldestAgeSec);
        applied = q.applied;
      },
    });
    for (const r of registers) r.registerMetric(oldest);
    new Counter({
      name: 'ferry_delete_queue_applied_total',
      help: 'Delete-queue entries applied (or found already done) since start',
      registers,
      collect() {
        this.reset();
        this.inc(applied);
      },
    });
    new Gauge({
      name: 'ferry_ready',
      help: '1 when ferryd is ready: serving ADD, and its storage writable',
      registers,
      collect() {
        this.set(sources.ready() ? 1 : 0);
      },
    });
  }
}
