/**
 * ferryd with peers from a Kubernetes API (the fake API server inside the node's namespace, as the API
 * server's service address would be reached from a node): nodes added, changed (new InternalIP) and
 * deleted while it runs, a 410 Gone and a dropped watch, and ferryd's host-gw routes follow each change.
 * The time each change took to reach the kernel is printed; the ceiling below only bounds a hang.
 */
import { expect, test } from 'vitest';
import { ferryctl } from '../fixtures/ferryctl';
import { useFerryd } from '../fixtures/ferryd';
import { nodeObject, useKubeApi } from '../fixtures/kube-api';
import { inNetns, type TestNetns, useNetns, useVeth } from '../fixtures/netns';
import { useNodeNetns } from '../fixtures/node';

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
