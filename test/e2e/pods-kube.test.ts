/**
 * ferryd's view of its node's pods, against the stand-in API server inside the node's namespace (as the
 * API server's service address is reached from a node): a real ferryd whose config says
 * `cluster.kubernetes.pods` (with routing none) follows the pods bound to its node across a 410 Gone and
 * a dropped watch, answers a pod the watch has not delivered with a direct GET, and with the API server
 * stopped answers cached pods and fails the others with code 11 within its bound. Its network-status
 * writer, fed by real ADDs and DELs of the real shim, patches only Ferry's entries of the pod's
 * annotation (another writer's entry survives), redoes a write that met a conflict, and catches up once
 * the API server is back. Times are printed, never asserted.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Code } from '@ferry/shared-types/errors';
import { FERRY_ATTACHMENT_KEY, NETWORK_STATUS_ANNOTATION } from '@ferry/shared-types/kube/network-status';
import { expect, test } from 'vitest';
import { netConf, newContainerId } from '../fixtures/conf';
import { ferryctl } from '../fixtures/ferryctl';
import type { Ferryd } from '../fixtures/ferryd';
import { FAST_PASSES, useFerryd } from '../fixtures/ferryd';
import { linkNames } from '../fixtures/kernel';
import { type KubeApi, nodeObject, podObject, useKubeApi } from '../fixtures/kube-api';
import { inNetns, type TestNetns, useNetns } from '../fixtures/netns';
import { ferryEntries, podCniArgs, type StatusEntry, untilNetworkStatus } from '../fixtures/network-status';
import { useNodeNetns } from '../fixtures/node';
import { DIST_BIN } from '../fixtures/paths';
import { ferryRules, unusedRules } from '../fixtures/rbac';
import { runShim } from '../fixtures/shim';
import { useTmpDir } from '../fixtures/tmp';
import { waitFor } from '../fixtures/wait';

const NODE = 'node-a';
const LOOKUP_TIMEOUT_MS = 1500;
const multus = {
  name: 'kube-system/macvlan-conf',
  interface: 'net1',
  ips: ['192.168.1.205'],
  mac: '86:1d:96:ff:55:0d',
  dns: {},
};

interface PodsReport {
  watch: { synced: boolean; watchRestarts: number; lastError: string | null };
  networkStatus?: { pending: number; written: number; conflicts: number; failed: number };
  pods: { namespace: string; name: string; uid: string; nics?: unknown[]; problem?: string }[];
}

async function useNodeWithPods(t: Parameters<typeof useNodeNetns>[0]) {
  const node = await useNodeNetns(t);
  const api = await useKubeApi(t, { netns: node });
  const start = async (pods?: Record<string, unknown>) => {
    const ferryd = await useFerryd(t, {
      netns: node,
      config: {
        cluster: {
          nodeName: NODE,
          routing: 'none',
          kubernetes: { kubeconfig: api.kubeconfig, pods: { lookupTimeoutMs: LOOKUP_TIMEOUT_MS, ...pods } },
        },
        // The writer compares every pod with the records this often (and at every pod event).
        ...FAST_PASSES,
      },
    });
    return ferryd;
  };
  return { node, api, start };
}

async function podsReport(ferryd: Ferryd): Promise<PodsReport> {
  const r = await ferryd.request('GET', '/v1/operator/pods');
  if (r.status !== 200) throw new Error(`GET /v1/operator/pods: ${r.status} ${r.body}`);
  return r.json as PodsReport;
}

/** Waits until ferryd's cache holds exactly these pods (namespace/name); returns how long that took. */
async function untilCached(ferryd: Ferryd, want: string[], what: string): Promise<void> {
  const t0 = performance.now();
  let have: string[] = [];
  await waitFor(
    `${what}: cache ${JSON.stringify(have)}, want ${JSON.stringify(want)}`,
    async () => {
      const report = await podsReport(ferryd);
      have = report.pods.map((p) => `${p.namespace}/${p.name}`);
      return report.watch.synced && JSON.stringify(have) === JSON.stringify([...want].sort());
    },
    10_000,
  );
  console.log(`pods-kube: ${what}: the cache followed in ${(performance.now() - t0).toFixed(0)} ms`);
}

const podWatches = async (api: KubeApi) => (await api.stats()).watches.filter((w) => w.resource === 'pods');

test("ferryd's pod cache follows its node's pods: created, changed, bound, deleted, across a 410 Gone and a dropped watch", async (t) => {
  const { api, start } = await useNodeWithPods(t);
  await api.putPod(podObject('a', 'web-1', NODE));
  await api.putPod(podObject('b', 'db-1', 'node-b'));
  const ferryd = await start();
  await untilCached(ferryd, ['a/web-1'], 'initial list');

  await api.putPod(podObject('a', 'web-2', NODE));
  await untilCached(ferryd, ['a/web-1', 'a/web-2'], 'pod created');
  await api.putPod(podObject('a', 'web-1', NODE, { 'ferry.dev/nics': '[{"group":"frontend","ifName":"net1"}]' }));
  await waitFor('the changed annotation', async () => {
    const web1 = (await podsReport(ferryd)).pods.find((p) => p.name === 'web-1');
    return JSON.stringify(web1?.nics) === '[{"group":"frontend","ifName":"net1"}]';
  });
  // The scheduler binds a pending pod to this node: it arrives then.
  await api.putPod(podObject('c', 'late-1', undefined));
  await api.putPod(podObject('c', 'late-1', NODE));
  await api.deletePod('a', 'web-2');
  await untilCached(ferryd, ['a/web-1', 'c/late-1'], 'pod bound, pod deleted');

  // Changes the watch never sees (the API server compacted them away), then the watch expires: a relist.
  await api.deletePod('a', 'web-1', { silent: true });
  await api.putPod(podObject('a', 'web-3', NODE), { silent: true });
  const listsBefore = (await api.stats()).lists;
  await api.expire();
  await untilCached(ferryd, ['a/web-3', 'c/late-1'], '410 Gone');
  expect((await api.stats()).lists).toBeGreaterThan(listsBefore);

  // A cut connection: the watch resumes from the last resourceVersion, no relist.
  await api.watching(1, 'pods');
  const lists = (await api.stats()).lists;
  expect(await api.drop()).toBeGreaterThanOrEqual(1);
  await api.putPod(podObject('a', 'web-4', NODE));
  await untilCached(ferryd, ['a/web-3', 'a/web-4', 'c/late-1'], 'dropped watch');
  const stats = await api.stats();
  expect(stats.lists).toBe(lists);
  const watches = await podWatches(api);
  expect(watches.at(-1)?.resourceVersion).not.toBe('');
  // Every pod list and watch asked for this node's pods only, with bookmarks.
  for (const w of watches)
    expect(w).toMatchObject({ fieldSelector: `spec.nodeName=${NODE}`, allowWatchBookmarks: true });
  expect((await podsReport(ferryd)).watch.watchRestarts).toBeGreaterThanOrEqual(2);
  // What an operator reads: ferryctl pods.
  const listed = await ferryctl(ferryd, 'pods');
  expect(listed.exitCode, listed.stderr).toBe(0);
  expect(listed.stdout).toMatch(/^node node-a: pod watch synced, .*watch restarts [2-9]/);
  expect(
    listed.stdout
      .split('\n')
      .filter((l) => /^[ac]\//.test(l))
      .map((l) => l.split(/\s+/)[0]),
  ).toEqual(['a/web-3', 'a/web-4', 'c/late-1']);
  const shown = await ferryctl(ferryd, '--json', 'pods', 'show', 'a/web-3');
  expect(JSON.parse(shown.stdout)).toMatchObject({ namespace: 'a', name: 'web-3', source: 'cache' });
});

test('a pod the watch has not delivered is asked for directly; with the API server stopped, cached pods answer and others fail with code 11', async (t) => {
  const { api, start } = await useNodeWithPods(t);
  const { uid } = await api.putPod(podObject('a', 'web-1', NODE));
  const ferryd = await start();
  await untilCached(ferryd, ['a/web-1'], 'initial list');
  // Stored without an event reaching the open watch: the cache cannot have it yet.
  const late = await api.putPod(podObject('a', 'late-1', NODE, { 'ferry.dev/nics': '[{"mac":"02:00:00:00:00:01"}]' }), {
    silent: true,
  });
  const gets = (await api.stats()).gets;
  const direct = await ferryd.request('GET', `/v1/operator/pods/a/late-1?uid=${late.uid}`);
  expect(direct.status, direct.body).toBe(200);
  expect(direct.json).toMatchObject({
    name: 'late-1',
    uid: late.uid,
    source: 'api',
    nics: [{ mac: '02:00:00:00:00:01' }],
  });
  expect((await api.stats()).gets).toBe(gets + 1);
  // The API server has no such pod: absent, not an error to retry.
  expect((await ferryd.request('GET', '/v1/operator/pods/a/nobody')).json).toMatchObject({ code: Code.NotFound });

  await api.stop();
  const cached = await ferryd.request('GET', `/v1/operator/pods/a/web-1?uid=${uid}`);
  expect(cached.json).toMatchObject({ name: 'web-1', source: 'cache' });
  const t0 = performance.now();
  const away = await ferryd.request('GET', '/v1/operator/pods/a/other-1');
  const ms = performance.now() - t0;
  expect(away.status).toBe(503);
  expect(away.json).toMatchObject({
    code: Code.TryAgainLater,
    msg: expect.stringMatching(
      new RegExp(
        `^look up pod a/other-1: the Kubernetes API did not answer within ${LOOKUP_TIMEOUT_MS} ms \\(kubernetes api: .*ECONNREFUSED.*\\); try again later$`,
      ),
    ),
  });
  console.log(`pods-kube: API server away: code 11 after ${ms.toFixed(0)} ms (bound ${LOOKUP_TIMEOUT_MS} ms)`);
  // Back: the watch lists again and has what was made meanwhile.
  await api.putPod(podObject('a', 'other-1', NODE));
  await api.start();
  await untilCached(ferryd, ['a/late-1', 'a/other-1', 'a/web-1'], 'API server back');
});

const untilStatus = (api: KubeApi, name: string, pred: (s: StatusEntry[] | undefined) => boolean, what: string) =>
  untilNetworkStatus(api, { namespace: 'a', name }, pred, `pods-kube: ${what}`);

/** ADDs pod a/NAME on the node with the real shim, as the kubelet's runtime does (K8S_POD_* in CNI_ARGS). */
async function addPod(node: TestNetns, ferryd: Ferryd, pod: TestNetns, name: string, uid: string) {
  const call = {
    containerId: newContainerId(),
    ifName: 'eth0',
    netns: pod,
    conf: netConf(ferryd),
    cniArgs: podCniArgs('a', name, uid),
  };
  const add = await runShim(node, 'ADD', call);
  expect(add.exitCode, add.stdout).toBe(0);
  const result = add.json as {
    interfaces: { name: string; mac: string; sandbox?: string }[];
    ips: { address: string }[];
  };
  return { call, result };
}

const ours = ferryEntries;

test("network-status: ADD writes Ferry's entry next to another writer's, a conflict is redone, DEL takes it out, and writes missed while the API server is away catch up", async (t) => {
  const { node, api, start } = await useNodeWithPods(t);
  const web1 = await api.putPod(
    podObject('a', 'web-1', NODE, { [NETWORK_STATUS_ANNOTATION]: JSON.stringify([multus]) }),
  );
  const web2 = await api.putPod(podObject('a', 'web-2', NODE));
  const ferryd = await start();
  await untilCached(ferryd, ['a/web-1', 'a/web-2'], 'initial list');

  // 1. ADD: Ferry's eth0 entry with the ADD's addresses and MAC; Multus' entry as it was.
  const pod1 = await useNetns(t, 'pod');
  const add1 = await addPod(node, ferryd, pod1, 'web-1', web1.uid);
  const status1 = await untilStatus(api, 'web-1', (s) => ours(s).length === 1, 'ADD');
  const eth0 = add1.result.interfaces.find((i) => i.sandbox);
  expect(ours(status1)).toEqual([
    {
      name: 'ferry',
      interface: 'eth0',
      ips: add1.result.ips.map((ip) => ip.address.split('/')[0]),
      mac: eth0?.mac,
      default: true,
      [FERRY_ATTACHMENT_KEY]: { network: 'ferry', containerId: add1.call.containerId, ifName: 'eth0' },
    },
  ]);
  expect(status1.filter((e) => e[FERRY_ATTACHMENT_KEY] === undefined)).toEqual([multus]);

  // 2. Another writer changes the pod just before Ferry's patch lands: 409, read again, written over it.
  await api.raceNextPatch('a', 'web-2', { [NETWORK_STATUS_ANNOTATION]: JSON.stringify([multus]) });
  const pod2 = await useNetns(t, 'pod');
  const add2 = await addPod(node, ferryd, pod2, 'web-2', web2.uid);
  const status2 = await untilStatus(api, 'web-2', (s) => ours(s).length === 1, 'ADD after a conflict');
  expect(status2.filter((e) => e[FERRY_ATTACHMENT_KEY] === undefined)).toEqual([multus]);
  const web2Patches = (await api.stats()).patches.filter((p) => p.name === 'web-2').map((p) => p.code);
  expect(web2Patches.slice(0, 2)).toEqual([409, 200]);
  expect(web2Patches.slice(2).every((c) => c === 200)).toBe(true);

  // 3. DEL: Ferry's entry goes, Multus' stays.
  const del = await runShim(node, 'DEL', add1.call);
  expect(del.exitCode, del.stdout).toBe(0);
  expect(await untilStatus(api, 'web-1', (s) => ours(s).length === 0, 'DEL')).toEqual([multus]);

  // 4. The API server away: an ADD of a pod in the cache and a DEL meanwhile, written once it is back; the
  // ADD of a pod made meanwhile (not in the cache: ferryd asks for it) fails with 11 and builds nothing.
  const web3 = await api.putPod(podObject('a', 'web-3', NODE));
  await untilCached(ferryd, ['a/web-1', 'a/web-2', 'a/web-3'], 'web-3 created');
  await api.stop();
  const web4 = await api.putPod(podObject('a', 'web-4', NODE));
  const pod4 = await useNetns(t, 'pod');
  const unknown = await runShim(node, 'ADD', {
    containerId: newContainerId(),
    ifName: 'eth0',
    netns: pod4,
    conf: netConf(ferryd),
    cniArgs: podCniArgs('a', 'web-4', web4.uid),
  });
  expect(unknown.json).toMatchObject({
    code: Code.TryAgainLater,
    msg: expect.stringMatching(/^look up pod a\/web-4: /),
  });
  expect(await linkNames(pod4)).toEqual(['lo']);
  const pod3 = await useNetns(t, 'pod');
  await addPod(node, ferryd, pod3, 'web-3', web3.uid);
  const del2 = await runShim(node, 'DEL', add2.call);
  expect(del2.exitCode, del2.stdout).toBe(0);
  await waitFor(
    'a failed write while the API server is away',
    async () => ((await podsReport(ferryd)).networkStatus?.failed ?? 0) > 0,
  );
  await api.start();
  expect(ours(await untilStatus(api, 'web-3', (s) => ours(s).length === 1, 'API server back (ADD)'))).toHaveLength(1);
  expect(await untilStatus(api, 'web-2', (s) => ours(s).length === 0, 'API server back (DEL)')).toEqual([multus]);

  // The cache lists again once the API server is back, and writes that met conflicts meanwhile back off:
  // both gauges settle after the two pods' statuses.
  await waitFor(
    'the cache listing all four pods again, no status write pending',
    async () => {
      const body = (await ferryd.request('GET', '/metrics')).body;
      return /^ferry_pods_watched 4$/m.test(body) && /^ferry_network_status_pending 0$/m.test(body);
    },
    35_000,
  ); // a write that failed while the API server was away retries within the back-off's 30 s cap
  const metrics = (await ferryd.request('GET', '/metrics')).body;
  expect(metrics).toMatch(/^ferry_network_status_writes_total\{result="conflict"\} [1-9]/m);
  expect(metrics).toMatch(/^ferry_network_status_writes_total\{result="failed"\} [1-9]/m);
});

test('networkStatus off (Multus writes the annotation): ferryd still watches its pods, and never patches one', async (t) => {
  const { node, api, start } = await useNodeWithPods(t);
  const web1 = await api.putPod(podObject('a', 'web-1', NODE));
  const ferryd = await start({ networkStatus: false });
  await untilCached(ferryd, ['a/web-1'], 'initial list');
  const pod1 = await useNetns(t, 'pod');
  await addPod(node, ferryd, pod1, 'web-1', web1.uid);
  // Nothing may happen now; give a write that should not come five of the resync periods (0.2 s) anyway.
  await new Promise((r) => setTimeout(r, 1000));
  expect((await api.stats()).patches).toEqual([]);
  expect((await podsReport(ferryd)).networkStatus).toBeUndefined();
  expect((await ferryd.request('GET', '/metrics')).body).not.toMatch(/ferry_network_status_writes_total/);
});

test('deploy/rbac.yaml allows what ferryd (node and pod watches, lookups, status writes) and the install step do, and no core rule goes unused', async (t) => {
  const { node, api, start } = await useNodeWithPods(t);
  await api.put(nodeObject(NODE, ['192.0.2.1'], ['10.244.1.0/24']));
  const web1 = await api.putPod(podObject('a', 'web-1', NODE));
  const ferryd = await start();
  await untilCached(ferryd, ['a/web-1'], 'initial list');
  await addPod(node, ferryd, await useNetns(t, 'pod'), 'web-1', web1.uid);
  await untilStatus(api, 'web-1', (s) => ours(s).length === 1, 'ADD');
  expect((await ferryd.request('GET', '/v1/operator/pods/a/not-yet')).json).toMatchObject({ code: Code.NotFound });
  // The DaemonSet's render-config step, as deploy/daemonset.yaml runs it, against the same API server.
  const dir = useTmpDir(t, 'render');
  writeFileSync(join(dir, 'ferryd.yaml.tmpl'), 'networks: [{ name: ferry, ipv4: { subnet: "{{POD_CIDR_V4}}" } }]\n');
  writeFileSync(join(dir, 'token'), 'a-service-account-token');
  await inNetns(
    node,
    join(DIST_BIN, 'ferryctl'),
    'install',
    `--ferryd-config-template=${join(dir, 'ferryd.yaml.tmpl')}`,
    `--ferryd-config-out=${join(dir, 'ferryd.yaml')}`,
    `--node=${NODE}`,
    `--api-server=${api.url}`,
    `--api-token-file=${join(dir, 'token')}`,
  );
  // The stand-in authorized every request as RBAC does (403 otherwise): none was refused; and each rule
  // of the core API group (nodes, pods) is one that a request here needed.
  const { requests, forbidden } = await api.stats();
  expect(forbidden).toEqual([]);
  expect(requests).toContainEqual({ verb: 'patch', resource: 'pods/status' });
  expect(requests.filter((r) => r.verb !== 'get' && r.verb !== 'list' && r.verb !== 'watch')).toEqual(
    requests.filter((r) => r.resource === 'pods/status'),
  );
  const core = ferryRules().filter(({ rule }) => rule.apiGroups.every((g) => g === ''));
  expect(unusedRules(core, requests)).toEqual([]);
});
