/**
 * The scrape listener (`metrics` in ferryd's config) as Prometheus meets it from another host: /metrics
 * and the probes on the node's address, nothing of the shim's routes or the operator API. What a real
 * Prometheus makes of it (discovery, the dashboard's queries, the alerts) is prometheus.test.ts.
 */
import { DEFAULT_METRICS_PORT } from '@ferry/shared-types/config/ferryd';
import { expect, test } from 'vitest';
import { addPod, useCluster, waitSynced } from '../fixtures/cluster';
import { netConf, newContainerId } from '../fixtures/conf';
import { useNetns } from '../fixtures/netns';
import { fetchIn } from '../fixtures/netns-fetch';
import { parseScrape } from '../fixtures/prometheus';
import { runShim } from '../fixtures/shim';

test('Prometheus scrapes the node: /metrics and the probes only', async (t) => {
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

  // Every metric name the dashboard and the alerts use, read by a real Prometheus: prometheus.test.ts.
});
