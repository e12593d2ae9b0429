import { collectDefaultMetrics, Registry } from 'prom-client';
import { expect, test } from 'vitest';
import { collectProcessMetrics } from './process-metrics';

const names = async (registry: Registry) => (await registry.getMetricsAsJSON()).map((m) => m.name).sort();

test("ferryd's process metrics are prom-client's defaults, under their own names, less the timer-driven event-loop histogram", async () => {
  // The oracle: what collectDefaultMetrics registers (its 10 ms timer is unref'd and dies with the test).
  const defaults = new Registry();
  collectDefaultMetrics({ register: defaults });
  const ours = new Registry();
  collectProcessMetrics(ours);
  const histogram = ['min', 'max', 'mean', 'stddev', 'p50', 'p90', 'p99'].map(
    (s) => `nodejs_eventloop_lag_${s}_seconds`,
  );
  expect(await names(ours)).toEqual((await names(defaults)).filter((n) => !histogram.includes(n)));
});

test('the event-loop lag is measured at scrape time', async () => {
  const registry = new Registry();
  collectProcessMetrics(registry);
  const text = await registry.metrics();
  const lag = Number(/^nodejs_eventloop_lag_seconds (\S+)$/m.exec(text)?.[1]);
  expect(lag).toBeGreaterThan(0);
  expect(lag).toBeLessThan(5);
  expect(text).toMatch(/^process_cpu_seconds_total \S+$/m);
  expect(text).toMatch(/^nodejs_heap_size_used_bytes \d+$/m);
});
