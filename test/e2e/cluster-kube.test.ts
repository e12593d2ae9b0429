/**
 * ferryd with peers from a Kubernetes API (the fake API server inside the node's namespace, as the API
 * server's service address would be reached from a node): nodes added, changed (new InternalIP) and
 * deleted while it runs, a 410 Gone and a dropped watch, and ferryd's host-gw routes follow each change.
 * With pods on three nodes whose peers all come from the API, a re-addressed node stays reachable and a
 * deleted one does not. The time each change took to reach the kernel is printed; the ceiling below only
 * bounds a hang.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { addPod, type ClusterNode, useCluster } from '../fixtures/cluster';
import { ferryctl } from '../fixtures/ferryctl';
import { useFerryd } from '../fixtures/ferryd';
import { ping } from '../fixtures/kernel';
import { kubeconfigFor, nodeObject, useKubeApi } from '../fixtures/kube-api';
import { inNetns, type TestNetns, useNetns, useVeth } from '../fixtures/netns';
import { useNodeNetns } from '../fixtures/node';
import { useTmpDir } from '../fixtures/tmp';

const CEILING_MS = 10_000;

async function ferryRoutes(node: TestNetns): Promise<string[]> {
  const out: string[] = [];
  for (const family of ['-4', '-6']) {
    const list: { dst: string; gateway?: string }[] = JSON.parse(
      await inNetns(node, 'ip', '-j', family, 'route', 'show', 'proto', '117'),
    );
    out.push(...list.map((r) => `${r.dst} via ${r.gateway}`));
  }
  return out.sort();
}

/** Polls until the node's Ferry routes are `want`; returns how long that took. */
async function until(node: TestNetns, want: string[], what: string): Promise<number> {
  const t0 = performance.now();
  let have: string[] = [];
  while (performance.now() - t0 < CEILING_MS) {
    have = await ferryRoutes(node);
    if (JSON.stringify(have) === JSON.stringify([...want].sort())) {
      const ms = performance.now() - t0;
      console.log(`${what}: routes followed in ${ms.toFixed(0)} ms`);
      return ms;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`${what}: routes are ${JSON.stringify(have)}, want ${JSON.stringify(want)}`);
}

const node = (n: number, ip4 = `192.168.10.${10 + n}`) =>
  nodeObject(`node-${n}`, [ip4, `fd00:168:10::${10 + n}`], [`10.244.${n}.0/24`, `fd00:10:244:${n}::/64`]);

test('host-gw routes follow Node objects added, changed and deleted, across a 410 Gone and a dropped watch', async (t) => {
  const host = await useNodeNetns(t);
  const underlay = await useNetns(t, 'ul');
  await useVeth(host, 'eth0', underlay, 'n0');
  await inNetns(host, 'ip', 'addr', 'add', '192.168.10.11/24', 'dev', 'eth0');
  await inNetns(host, 'ip', 'addr', 'add', 'fd00:168:10::11/64', 'dev', 'eth0', 'nodad');
  const api = await useKubeApi(t, { netns: host });
  await api.put(node(1));
  await api.put(node(2));
  const ferryd = await useFerryd(t, {
    netns: host,
    config: {
      networks: [{ name: 'ferry', ipv4: { subnet: '10.244.1.0/24' }, ipv6: { subnet: 'fd00:10:244:1::/64' } }],
      cluster: { nodeName: 'node-1', routing: 'host-gw', kubernetes: { kubeconfig: api.kubeconfig } },
    },
  });
  await until(host, ['10.244.2.0/24 via 192.168.10.12', 'fd00:10:244:2::/64 via fd00:168:10::12'], 'initial list');

  await api.put(node(3));
  await until(
    host,
    [
      '10.244.2.0/24 via 192.168.10.12',
      'fd00:10:244:2::/64 via fd00:168:10::12',
      '10.244.3.0/24 via 192.168.10.13',
      'fd00:10:244:3::/64 via fd00:168:10::13',
    ],
    'node added',
  );
  await api.put(node(2, '192.168.10.22'));
  await until(
    host,
    [
      '10.244.2.0/24 via 192.168.10.22',
      'fd00:10:244:2::/64 via fd00:168:10::12',
      '10.244.3.0/24 via 192.168.10.13',
      'fd00:10:244:3::/64 via fd00:168:10::13',
    ],
    'new InternalIP',
  );
  await api.delete('node-3');
  await until(host, ['10.244.2.0/24 via 192.168.10.22', 'fd00:10:244:2::/64 via fd00:168:10::12'], 'node deleted');

  await api.expire();
  await api.put(node(4));
  const four = ['10.244.4.0/24 via 192.168.10.14', 'fd00:10:244:4::/64 via fd00:168:10::14'];
  await until(
    host,
    ['10.244.2.0/24 via 192.168.10.22', 'fd00:10:244:2::/64 via fd00:168:10::12', ...four],
    'after 410 Gone',
  );
  await api.watching();
  await api.drop();
  await api.delete('node-2');
  await until(host, four, 'after a dropped watch');

  const report = JSON.parse((await ferryctl(ferryd, 'nodes', '--json')).stdout);
  expect(report.source).toMatchObject({ kind: 'kubernetes', lastError: null });
  expect(report.source.watchRestarts).toBeGreaterThanOrEqual(2);
  expect(report.peers.map((p: { name: string; state: string }) => `${p.name} ${p.state}`)).toEqual(['node-4 ok']);
  const metrics = await ferryd.request('GET', '/metrics');
  expect(metrics.body).toMatch(/^ferry_cluster_watch_restarts_total [2-9]/m);
  expect(metrics.body).toMatch(/^ferry_cluster_peers\{state="routable"\} 1$/m);
});

test('pods on three nodes whose peers come from the API: a node re-addressed stays reachable, a deleted one is not', async (t) => {
  const underlay = await useNetns(t, 'ul');
  const api = await useKubeApi(t, { netns: underlay, host: '0.0.0.0' });
  // The nodes reach the API server at the underlay's bridge address, as a node reaches its API server.
  const kubeconfig = join(useTmpDir(t, 'kubeconfig'), 'kubeconfig');
  writeFileSync(kubeconfig, kubeconfigFor(`http://192.168.10.1:${new URL(api.url).port}`));
  for (const n of [1, 2, 3]) await api.put(node(n));
  const { nodes } = await useCluster(t, {
    routing: 'host-gw',
    nodes: 3,
    topology: 'l2',
    underlay,
    cluster: { peers: [], kubernetes: { kubeconfig } },
  });
  const [n1, n2, n3] = nodes as [ClusterNode, ClusterNode, ClusterNode];
  await until(n1.node, [...routesTo(2), ...routesTo(3)], 'initial list');
  const pods = [await addPod(t, n1), await addPod(t, n2), await addPod(t, n3)] as const;
  for (const [i, a] of pods.entries()) {
    for (const [j, b] of pods.entries()) {
      if (i !== j) expect(await ping(a.netns, b.ipv4), `pod ${i + 1} → pod ${j + 1}`).toBe(true);
    }
  }

  // node-2 moves to a new InternalIP: the others follow, and the old address can go.
  // Deleting the old (primary) address later must not take the new one with it.
  await inNetns(n2.node, 'sysctl', '-qw', 'net.ipv4.conf.eth0.promote_secondaries=1');
  await inNetns(n2.node, 'ip', 'addr', 'add', '192.168.10.22/24', 'dev', 'eth0');
  await api.put(node(2, '192.168.10.22'));
  const moved = ['10.244.2.0/24 via 192.168.10.22', 'fd00:10:244:2::/64 via fd00:168:10::12'];
  await until(n1.node, [...moved, ...routesTo(3)], 'node-2 re-addressed');
  await until(n3.node, [...routesTo(1), ...moved], 'node-2 re-addressed, seen from node-3');
  await inNetns(n2.node, 'ip', 'addr', 'del', '192.168.10.12/24', 'dev', 'eth0');
  expect(await ping(pods[0].netns, pods[1].ipv4), 'pod 1 → pod 2 after the move').toBe(true);
  expect(await ping(pods[2].netns, pods[1].ipv6), 'pod 3 → pod 2 after the move').toBe(true);

  await api.delete('node-3');
  await until(n1.node, moved, 'node-3 deleted');
  expect(await ping(pods[0].netns, pods[2].ipv4)).toBe(false);
  expect(await ping(pods[0].netns, pods[1].ipv4)).toBe(true);
});

const routesTo = (n: number) => [
  `10.244.${n}.0/24 via 192.168.10.${10 + n}`,
  `fd00:10:244:${n}::/64 via fd00:168:10::${10 + n}`,
];
