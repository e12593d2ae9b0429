/**
 * prom-client's default process and Node.js metrics, all but its event-loop delay histogram
 * (nodejs_eventloop_lag_{min,max,mean,stddev,p50,p90,p99}_seconds): that one samples a 10 ms timer
 * (perf_hooks.monitorEventLoopDelay), 100 wake-ups a second, which were nearly all of an idle ferryd's CPU
 * (5 ms a second, bench:ferryd-sparse). The loop's lag is measured at scrape time instead, which needs no
 * timer. collectDefaultMetrics cannot leave one metric out, so its per-metric modules are registered
 * here one by one (prom-client is pinned; process-metrics.test.ts lists what each one registers).
 */

import { Gauge, type Registry } from 'prom-client';
import gc from 'prom-client/lib/metrics/gc.js';
import heapSizeAndUsed from 'prom-client/lib/metrics/heapSizeAndUsed.js';
import heapSpacesSizeAndUsed from 'prom-client/lib/metrics/heapSpacesSizeAndUsed.js';
import osMemoryHeap from 'prom-client/lib/metrics/osMemoryHeap.js';
import processCpuTotal from 'prom-client/lib/metrics/processCpuTotal.js';
import processHandles from 'prom-client/lib/metrics/processHandles.js';
import processMaxFileDescriptors from 'prom-client/lib/metrics/processMaxFileDescriptors.js';
import processOpenFileDescriptors from 'prom-client/lib/metrics/processOpenFileDescriptors.js';
import processRequests from 'prom-client/lib/metrics/processRequests.js';
import processResources from 'prom-client/lib/metrics/processResources.js';
import processStartTime from 'prom-client/lib/metrics/processStartTime.js';
import version from 'prom-client/lib/metrics/version.js';

const DEFAULT_METRICS = [
  processCpuTotal,
  processStartTime,
  osMemoryHeap,
  processOpenFileDescriptors,
  processMaxFileDescriptors,
  processResources,
  processHandles,
  processRequests,
  heapSizeAndUsed,
  heapSpacesSizeAndUsed,
  version,
  gc,
];

/**
 * Registers them under prom-client's own names (`process_cpu_seconds_total`, `nodejs_heap_size_used_bytes`…),
 * which stock Node.js and process dashboards and alerts look for; ferry's own metrics carry `ferry_`.
 */
export function collectProcessMetrics(registry: Registry): void {
  for (const register of DEFAULT_METRICS) register(registry, {});
  new Gauge({
    name: 'nodejs_eventloop_lag_seconds',
    help: 'Lag of event loop in seconds: how long a callback queued at scrape time waited for its turn.',
    registers: [registry],
    async collect() {
      const start = process.hrtime.bigint();
      await new Promise((resolve) => setImmediate(resolve));
      this.set(Number(process.hrtime.bigint() - start) / 1e9);
    },
  });
}
