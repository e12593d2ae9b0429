/**
 * The scrape listener (`metrics` in ferryd's config) as Prometheus meets it from another host: /metrics
 * and the probes on the node's address, nothing of the shim's routes or the operator API; and the Grafana
 * dashboard in deploy/monitoring, whose every query must name metrics a live ferryd exports (with the
 * label values it uses, where ferryd has series of that metric).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_METRICS_PORT } from '@ferry/shared-types/config/ferryd';
import { expect, test } from 'vitest';
import { addPod, useCluster, waitSynced } from '../fixtures/cluster';
import { netConf, newContainerId } from '../fixtures/conf';
import { fetchIn } from '../fixtures/http';
import { useNetns } from '../fixtures/netns';
import { ROOT } from '../fixtures/paths';
import { exportedNames, matches, parseScrape, selectorsOf } from '../fixtures/prometheus';
import { runShim } from '../fixtures/shim';

const DASHBOARD = join(ROOT, 'deploy', 'monitoring', 'ferry-dashboard.json');
/** Labels Prometheus adds to every series it scrapes (the PodMonitor adds `node`): never ferryd's own. */
const TARGET_LABELS = new Set(['node', 'instance', 'job', 'namespace', 'pod', 'container', 'endpoint']);

interface Panel {
  title: string;
  type: string;
  targets?: { expr: string }[];
  panels?: Panel[];
}

interface Dashboard {
  panels: Panel[];
  templating: { list: { name: string; type: string; query: string | { query: string } }[] };
}

/** Each query of the dashboard, as Prometheus receives it (Grafana's variables filled in). */
function queriesOf(dashboard: Dashboard): { where: string; expr: string }[] {
  const fill = (expr: string) => expr.replaceAll('$__rate_interval', '1m').replaceAll('$node', '.*');
  const out: { where: string; expr: string }[] = [];
  for (const panel of dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])])) {
    for (const target of panel.targets ?? []) out.push({ where: panel.title, expr: fill(target.expr) });
  }
  for (const v of dashboard.templating.list.filter((v) => v.type === 'query')) {
    const query = typeof v.query === 'string' ? v.query : v.query.query;
    // Grafana's label_values(metric, label): the metric is a selector of its own.
    const metric = /^label_values\((.+), *\w+\)$/.exec(query)?.[1];
    if (!metric) throw new Error(`variable ${v.name}: not a label_values() query: ${query}`);
    out.push({ where: `variable ${v.name}`, expr: metric });
  }
  return out;
}

test('Prometheus scrapes the node: /metrics and the probes only, and every dashboard query names what ferryd exports', async (t) => {
  // Two nodes on one link (host-gw), so the cluster-route metrics have routes to count; "Prometheus"
  // is the underlay namespace, another host on the nodes' network. Their pools are cluster-IPAM ranges
  // (peers and blocks from the API stand-in), so the block metrics are exported too.
  const { underlay, nodes } = await useCluster(t, {
    routing: 'host-gw',
    nodes: 2,
    topology: 'l2',
    kube: { podCIDRs: false },
    networks: () => [
      {
        name: 'ferry',
        ipv4: { subnet: '10.244.0.0/16', blocks: {} },
        ipv6: { subnet: 'fd00:10:244::/56', blocks: {} },
      },
    ],
    ferryd: { metrics: {}, delegatedDevices: [{ mac: '02:fe:00:00:aa:01', group: 'frontend' }] },
  });
  const [first] = nodes;
  if (!first) throw new Error('no node');
  await waitSynced(first);
  // A pod that stays, and one that comes and goes: the ADD and DEL series the dashboard's panels read.
  await addPod(t, first);
  const call = {
    containerId: newContainerId(),
    ifName: 'eth0',
    netns: await useNetns(t, 'pod'),
    conf: netConf(first.ferryd),
  };
  expect((await runShim(first.node, 'ADD', call)).exitCode).toBe(0);
  expect((await runShim(first.node, 'DEL', call)).exitCode).toBe(0);
  const at = (path: string) => `http://${first.addresses[0]}:${DEFAULT_METRICS_PORT}${path}`;

  expect((await fetchIn(underlay, 'GET', at('/healthz'))).status).toBe(200);
  expect(JSON.parse((await fetchIn(underlay, 'GET', at('/readyz'))).body)).toMatchObject({ ready: true });
  // Nothing else: neither the shim's routes nor the operator API (even unauthenticated 401s would say
  // they are there), nor the API document.
  for (const [method, path] of [
    ['POST', '/v1/allocations'],
    ['GET', `/v1/endpoints/${'c'.repeat(64)}`],
    ['DELETE', `/v1/endpoints/${'c'.repeat(64)}`],
    ['POST', '/v1/gc'],
    ['GET', '/v1/status'],
    ['GET', '/v1/operator/endpoints'],
    ['GET', '/v1/operator/pools'],
    ['GET', '/openapi.json'],
  ] as const) {
    expect((await fetchIn(underlay, method, at(path))).status, `${method} ${path}`).toBe(404);
  }
  const scraped = await fetchIn(underlay, 'GET', at('/metrics'));
  expect(scraped.status).toBe(200);
  expect(scraped.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
  const scrape = parseScrape(scraped.body);
  expect(scrape.samples).toContainEqual({ name: 'ferry_ready', labels: {} });

  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard;
  const titles = dashboard.panels.map((p) => p.title);
  for (const panel of [
    'ADD and DEL rate',
    'ADD and DEL latency',
    'Errors by CNI code',
    'Delete queue depth',
    'Oldest queued DEL',
    'Pool use (fullest node)',
    'Delegated devices by state',
    'Storage errors',
    'Routes, neighbours and FDB entries',
    'Cluster IPAM: range use',
  ]) {
    expect(titles, panel).toContain(panel);
  }
  const exported = exportedNames(scrape);
  const queries = queriesOf(dashboard);
  expect(queries.length).toBeGreaterThan(20);
  for (const { where, expr } of queries) {
    const selectors = selectorsOf(expr);
    expect(selectors.length, `${where}: ${expr}`).toBeGreaterThan(0);
    for (const { name, matchers } of selectors) {
      expect(exported.has(name), `${where}: ${name} is not a metric ferryd exports`).toBe(true);
      // Where ferryd has series of the metric, the query's label values pick some of them (a counter
      // that has counted nothing yet, such as storage errors, has none to hold the values to).
      const own = matchers.filter((m) => !TARGET_LABELS.has(m.label));
      const series = scrape.samples.filter((s) => s.name === name);
      if (series.length > 0) {
        expect(
          series.some((s) => matches(s.labels, own)),
          `${where}: no ${name} series has ${JSON.stringify(own)}`,
        ).toBe(true);
      }
    }
  }
});
