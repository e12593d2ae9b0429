/**
 * Debian's Prometheus, in its own namespace on the node's network, finds ferryd the way a cluster's does
 * and evaluates everything deploy/monitoring asks of it against a live ferryd:
 * - discovery: the pod role's targets (prometheus-server.ts: Debian's Prometheus has no Kubernetes
 *   discovery) of the DaemonSet's pod as the DaemonSet controller and the API server make it (no
 *   containerPort; its IP the node's), scraped through
 *   the PodMonitor as the Prometheus Operator turns it into a scrape config, and through the
 *   prometheus.io/* annotations as the plain kubernetes-pods job reads them: both reach ferryd at the
 *   node's address;
 * - the alert rules of the PrometheusRule, loaded as rule files: every rule evaluates without error, and
 *   only the alert for the work done here that should fire fires;
 * - every dashboard query and every alert expression evaluates, and each selector in them returns series,
 *   once the node has done the work it counts: pods added and deleted, a DEL queued while ferryd was down
 *   and applied by the next one, a pod's network-status written, a pod's NIC request refused, the device
 *   plugin registered, routes to a peer node, blocks of the cluster IPAM range claimed (the network's pool is
 *   the cluster's range, and the stand-in serves Ferry's CRDs).
 */
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_METRICS_PORT } from '@ferry/shared-types/config/ferryd';
import { NETWORK_STATUS_ANNOTATION } from '@ferry/shared-types/kube/network-status';
import type { IDaemonSet } from 'kubernetes-models/apps/v1/DaemonSet';
import type { IPodTemplateSpec } from 'kubernetes-models/v1/PodTemplateSpec';
import { expect, test } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { netConf, newContainerId } from '../fixtures/conf';
import { useFerryd } from '../fixtures/ferryd';
import { nodeObject, podObject, useKubeApi } from '../fixtures/kube-api';
import { useStandInKubelet } from '../fixtures/kubelet-plugins';
import { kustomize } from '../fixtures/kustomize';
import { inNetns, useNetns, useVeth } from '../fixtures/netns';
import { podCniArgs } from '../fixtures/network-status';
import { useNodeNetns } from '../fixtures/node';
import { ROOT } from '../fixtures/paths';
import { alertRules, ruleGroups, selectorsOf } from '../fixtures/prometheus';
import {
  annotationScrapeConfig,
  podMonitorScrapeConfigs,
  podTargets,
  usePrometheus,
} from '../fixtures/prometheus-server';
import { daemonSetPod } from '../fixtures/scheduler';
import { runShim } from '../fixtures/shim';
import { useTmpDir } from '../fixtures/tmp';
import { waitFor } from '../fixtures/wait';

const NODE = { name: 'node-1', ip: '192.168.10.11', podCIDR: '10.244.1.0/24' };
/** The cluster IPAM range the node's blocks come from (its first blocks inside its Node's podCIDR). */
const RANGE = '10.244.0.0/16';
const PEER = { name: 'node-2', ip: '192.168.10.12', podCIDR: '10.244.2.0/24' };
const JOB = 'ferry-system/ferryd';
const MONITORING = join(ROOT, 'deploy', 'monitoring');
/** Series no work here makes: a write that fails for a full, read-only or failing disk (storage-full.test.ts). */
const NOT_CAUSED_HERE = new Set(['ferry_storage_errors_total']);

interface Dashboard {
  panels: { title: string; targets?: { expr: string }[] }[];
  templating: { list: { name: string; type: string; query: string | { query: string } }[] };
}

/** Each dashboard query as Grafana sends it (its variables filled in), and the variables' own queries. */
function dashboardQueries(): { where: string; expr: string }[] {
  const d = JSON.parse(readFileSync(join(MONITORING, 'ferry-dashboard.json'), 'utf8')) as Dashboard;
  const fill = (e: string) => e.replaceAll('$__rate_interval', '15s').replaceAll('$node', '.*').replaceAll('$job', JOB);
  const out = d.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ where: p.title, expr: fill(t.expr) })));
  for (const v of d.templating.list.filter((x) => x.type === 'query')) {
    const q = typeof v.query === 'string' ? v.query : v.query.query;
    const metric = /^label_values\((.+), *\w+\)$/.exec(q)?.[1];
    if (!metric) throw new Error(`variable ${v.name}: not a label_values() query`);
    out.push({ where: `variable ${v.name}`, expr: fill(metric) });
  }
  return out;
}

/** A selector alone, as PromQL text. */
const selectorText = (s: ReturnType<typeof selectorsOf>[number]) =>
  `${s.name}{${s.matchers.map((m) => `${m.label}${m.op}${JSON.stringify(m.value)}`).join(',')}}`;

test('a real Prometheus discovers ferryd through the PodMonitor and the annotations, and every dashboard query and alert rule evaluates with series', {
  timeout: 240_000,
}, async (t) => {
  // The node, and "the rest of the network" where Prometheus and its API server run.
  const node = await useNodeNetns(t);
  const ul = await useNetns(t, 'ul');
  await useVeth(node, 'eth0', ul, 'ul0');
  await inNetns(node, 'ip', 'addr', 'add', `${NODE.ip}/24`, 'dev', 'eth0');
  await inNetns(ul, 'ip', 'addr', 'add', '192.168.10.1/24', 'dev', 'ul0');

  const api = await useKubeApi(t, { netns: node });
  await api.put(nodeObject(NODE.name, [NODE.ip], [NODE.podCIDR]));
  await api.put(nodeObject(PEER.name, [PEER.ip], [PEER.podCIDR]));
  const kubelet = await useStandInKubelet(t);
  const ferryd = await useFerryd(t, {
    netns: node,
    config: {
      networks: [{ name: 'ferry', ipv4: { subnet: RANGE, blocks: { prefixLength: 26 } } }],
      delegatedDevices: [{ mac: '02:fe:00:00:aa:01', group: 'frontend' }],
      devicePlugin: { kubeletDir: kubelet.dir },
      metrics: {},
      cluster: {
        nodeName: NODE.name,
        routing: 'host-gw',
        clusterCIDRs: [RANGE],
        kubernetes: { kubeconfig: api.kubeconfig, pods: {} },
      },
      reconcile: { intervalSec: 1 },
    },
  });

  // What Prometheus discovers: the DaemonSet's pod on the node, as deploy/ renders it and the DaemonSet
  // controller, the API server and the scheduler make it (bound, its IP the node's), and a pod of another
  // namespace that the PodMonitor must leave alone.
  const ds = kustomize(join(ROOT, 'deploy')).find((o) => o.kind === 'DaemonSet') as unknown as IDaemonSet;
  const pod = daemonSetPod(ds.spec?.template as IPodTemplateSpec, NODE.name, 'ferryd-7xk2p');
  const running = {
    phase: 'Running',
    hostIP: NODE.ip,
    podIP: NODE.ip,
    conditions: [{ type: 'Ready', status: 'True' }],
  };
  const ferrydPod = {
    ...pod,
    metadata: { ...pod.metadata, name: 'ferryd-7xk2p', namespace: 'ferry-system', uid: randomUUID() },
    spec: { ...pod.spec, nodeName: NODE.name },
    status: running,
  };
  const other = podObject('kube-system', 'kube-proxy-8kq2d', NODE.name);
  const dir = useTmpDir(t, 'sd');
  const targetsFile = join(dir, 'pods.json');
  writeFileSync(targetsFile, JSON.stringify(podTargets([ferrydPod, { ...other, status: running }] as never)));
  const podMonitor = parseYaml(readFileSync(join(MONITORING, 'podmonitor.yaml'), 'utf8'));
  const prometheus = await usePrometheus(t, {
    netns: ul,
    scrapeConfigs: [...podMonitorScrapeConfigs(podMonitor, targetsFile), annotationScrapeConfig(targetsFile)],
    ruleGroups: ruleGroups(),
  });

  // Until Prometheus (1 s scrapes and rule evaluations) has scraped what `expr` selects.
  const untilSeries = async (expr: string) => {
    try {
      await waitFor(expr, async () => (await prometheus.query(expr)).length > 0, 60_000);
    } catch {
      const seen = await prometheus.query(selectorText(selectorsOf(expr)[0] as never));
      throw new Error(`Prometheus never had ${expr}; it has ${JSON.stringify(seen)}\n${ferryd.log().slice(-2000)}`);
    }
  };
  // The work the panels and alerts count.
  const web1 = await api.putPod(podObject('a', 'web-1', NODE.name));
  const web2 = await api.putPod(podObject('a', 'web-2', NODE.name));
  const bad = await api.putPod(podObject('a', 'bad-1', NODE.name, { 'ferry.dev/nics': '[{"group":"nope"}]' }));
  const callOf = async (name: string, uid: string) => ({
    containerId: newContainerId(),
    ifName: 'eth0',
    netns: await useNetns(t, 'pod'),
    conf: netConf(ferryd),
    cniArgs: podCniArgs('a', name, uid),
  });
  const stays = await callOf('web-1', web1.uid);
  const goes = await callOf('web-2', web2.uid);
  await waitFor('the pod watch', async () => (await ferryd.request('GET', '/v1/operator/pods')).status === 200);
  // A DEL while ferryd is down is queued, and the next ferryd applies it; the ferryd that counts the rest
  // is that next one.
  expect((await runShim(node, 'ADD', goes)).exitCode).toBe(0);
  await ferryd.kill();
  // A ferryd that is down shows as down: its target's up is 0, and the dashboard's panel counts it.
  await untilSeries(`up{job="${JOB}"} == 0`);
  const downPanel = dashboardQueries().find((q) => q.where === 'ferryd down or not ready');
  expect((await prometheus.query(downPanel?.expr ?? '')).map((r) => r.value[1])).toEqual(['1']);
  expect((await runShim(node, 'DEL', goes)).exitCode).toBe(0);
  await ferryd.start();
  // Scraped by both jobs at least once before the refusal below: a counter's first sample must be its 0, or
  // increase() cannot see the refusal (why every reason is exported from 0).
  await untilSeries('count(ferry_delete_queue_applied_total >= 1) == 2');
  expect((await runShim(node, 'ADD', stays)).exitCode).toBe(0);
  // A pod that comes and goes with ferryd up: the DEL's request series.
  const brief = await callOf('web-2', web2.uid);
  expect((await runShim(node, 'ADD', brief)).exitCode).toBe(0);
  expect((await runShim(node, 'DEL', brief)).exitCode).toBe(0);
  await waitFor(
    "web-1's network-status",
    async () => (await api.getPod('a', 'web-1'))?.metadata.annotations?.[NETWORK_STATUS_ANNOTATION] !== undefined,
    15_000,
  );
  const refused = await runShim(node, 'ADD', await callOf('bad-1', bad.uid));
  expect(refused.exitCode).toBe(1);
  await kubelet.waitForDevices('ferry.dev/frontend', 'a list', () => true, 15_000);
  await untilSeries(`ferry_pod_nic_refusals_total{job="${JOB}", reason="unknown"} >= 1`);
  await untilSeries(`ferry_network_status_writes_total{job="${JOB}", result="written"} >= 1`);
  await untilSeries(`ferry_ipam_blocks{job="${JOB}", state="held"} >= 1`);
  // The alert for the refusal fires at the next evaluation (it has no `for`), once per job: both scrape the
  // one ferryd here, each at its own time; the annotations' job has no `node` label unless an install adds one.
  const firingNow = async () =>
    (await prometheus.alerts())
      .filter((a) => a.state === 'firing')
      .map((a) => [a.labels.alertname, a.labels.job, a.labels.node ?? '-', a.labels.reason])
      .sort();
  const refusalAlerts = [
    ['FerryPodNICRefused', JOB, NODE.name, 'unknown'],
    ['FerryPodNICRefused', 'kubernetes-pods', '-', 'unknown'],
  ];
  await waitFor(
    'the refusal alert of each job',
    async () => JSON.stringify(await firingNow()) === JSON.stringify(refusalAlerts),
    30_000,
  ).catch(async (err) => {
    throw new Error(
      `${err}: alerts ${JSON.stringify(await prometheus.alerts())}; rules ${JSON.stringify(await prometheus.rules())}`,
    );
  });

  // ferryd's requests (pods, network-status, blocks, the reclaimer's Lease and IPRange) were all authorized
  // by deploy/rbac.yaml as the stand-in applies it.
  expect((await api.stats()).forbidden).toEqual([]);

  // Discovery: one target per job, at the node's address and the annotation's port. The PodMonitor's keeps
  // the ferryd container's only (init containers are targets of pod discovery too).
  const targets = await prometheus.targets();
  const url = `http://${NODE.ip}:${DEFAULT_METRICS_PORT}/metrics`;
  const viaMonitor = targets.filter((x) => x.labels.job === JOB);
  expect(viaMonitor.map((x) => [x.scrapeUrl, x.health, x.labels.node, x.labels.container, x.labels.pod])).toEqual([
    [url, 'up', NODE.name, 'ferryd', 'ferryd-7xk2p'],
  ]);
  const viaAnnotations = targets.filter((x) => x.labels.job === 'kubernetes-pods');
  expect(viaAnnotations.length).toBeGreaterThan(0);
  for (const x of viaAnnotations) expect([x.scrapeUrl, x.health, x.lastError]).toEqual([url, 'up', '']);

  // Every rule evaluated, and none failed.
  const rules = await prometheus.rules();
  expect(rules.map((r) => r.name).sort()).toEqual(
    alertRules()
      .map((a) => a.alert)
      .sort(),
  );
  for (const r of rules) {
    expect([r.name, r.health, r.lastError ?? '']).toEqual([r.name, 'ok', '']);
    expect(Date.parse(r.lastEvaluation), r.name).toBeGreaterThan(0);
  }
  // What fires: the refused NIC request, nothing else.
  expect(await firingNow()).toEqual(refusalAlerts);

  // Every dashboard query returns series; every selector of every query and alert has series.
  const queries = dashboardQueries();
  expect(queries.length).toBeGreaterThan(25);
  const titles = queries.map((q) => q.where);
  for (const panel of [
    'ADD and DEL rate',
    'Errors by CNI code',
    'Delete queue depth',
    'Oldest queued DEL',
    'Pool use (fullest node)',
    'Cluster IPAM: range use',
    'ferryd down or not ready',
    'ferryd scraped',
    'Pod NIC refusals',
    'network-status writes',
    'Device plugin',
    'Routes, neighbours and FDB entries',
  ]) {
    expect(titles, panel).toContain(panel);
  }
  const expressions = [...queries, ...alertRules().map((a) => ({ where: `alert ${a.alert}`, expr: a.expr }))];
  for (const { where, expr } of expressions) {
    const selectors = selectorsOf(expr);
    if (selectors.some((s) => NOT_CAUSED_HERE.has(s.name))) {
      await prometheus.query(expr);
      continue;
    }
    // A rate() has a series once two samples of its counter fall in its window: a counter born at the last
    // request has one until the next scrape.
    if (!where.startsWith('alert ')) await untilSeries(expr);
    else await prometheus.query(expr);
    for (const s of selectors) {
      expect(
        (await prometheus.query(selectorText(s))).length,
        `${where}: ${selectorText(s)} has no series`,
      ).toBeGreaterThan(0);
    }
  }
});
