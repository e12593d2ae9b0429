/**
 * Cluster networking through real ferryd processes: three or four nodes (namespaces) on an underlay,
 * each with its own pod CIDR and pods added by the real shim; every pod pings every other pod across
 * nodes over IPv4 and IPv6, with host-gw routes (one link) and a VXLAN overlay (across an L3 hop).
 */
import { describe, expect, test } from 'vitest';
import {
  addPod,
  type ClusterNode,
  everyPodPingsEveryOther,
  type Pod,
  useCluster,
  waitSynced,
} from '../fixtures/cluster';
import { ferryctl } from '../fixtures/ferryctl';
import { inNetns, inNetnsTry } from '../fixtures/netns';

const PROTO = '117';

async function podsOn(t: Parameters<typeof addPod>[0], nodes: ClusterNode[]) {
  const out: { on: string; pod: Pod }[] = [];
  for (const n of nodes) out.push({ on: n.name, pod: await addPod(t, n) });
  return out;
}

async function ferryRoutes(
  n: ClusterNode,
): Promise<{ dst: string; gateway?: string; dev?: string; flags?: string[] }[]> {
  const out = [];
  for (const family of ['-4', '-6']) {
    out.push(...JSON.parse(await inNetns(n.node, 'ip', '-j', family, 'route', 'show', 'proto', PROTO)));
  }
  return out;
}

describe('host-gw', () => {
  test('every pod reaches every pod on the other nodes, IPv4 and IPv6; ferryctl nodes and doctor agree', async (t) => {
    const { nodes } = await useCluster(t, { routing: 'host-gw', nodes: 3, topology: 'l2' });
    await Promise.all(nodes.map((n) => waitSynced(n)));
    const [n1] = nodes as [ClusterNode];
    expect((await ferryRoutes(n1)).map((r) => `${r.dst} via ${r.gateway}`).sort()).toEqual([
      '10.244.2.0/24 via 192.168.10.12',
      '10.244.3.0/24 via 192.168.10.13',
      'fd00:10:244:2::/64 via fd00:168:10::12',
      'fd00:10:244:3::/64 via fd00:168:10::13',
    ]);
    await everyPodPingsEveryOther(await podsOn(t, nodes));

    const report = await ferryctl(n1.ferryd, 'nodes', '--json');
    expect(report.exitCode, report.stderr).toBe(0);
    const json = JSON.parse(report.stdout);
    expect(json).toMatchObject({ nodeName: 'node-1', routing: 'host-gw', routeProtocol: 117, stale: [] });
    expect(json.peers.map((p: { name: string; state: string }) => `${p.name} ${p.state}`)).toEqual([
      'node-2 ok',
      'node-3 ok',
    ]);
    const table = await ferryctl(n1.ferryd, 'nodes');
    expect(table.stdout).toContain('10.244.3.0/24 → 192.168.10.13');
    expect(await ferryctl(n1.ferryd, 'doctor')).toMatchObject({ exitCode: 0 });

    // Behind ferryd's back: one of its routes goes, a stray route carries its protocol.
    await inNetns(n1.node, 'ip', 'route', 'del', '10.244.2.0/24', 'proto', PROTO);
    await inNetns(n1.node, 'ip', 'route', 'add', '10.250.0.0/24', 'via', '192.168.10.12', 'proto', PROTO);
    const sick = await ferryctl(n1.ferryd, 'doctor');
    expect(sick.exitCode).toBe(1);
    expect(sick.stdout).toMatch(/peer-entry-missing\s+node-2\s+route 10\.244\.2\.0\/24 → 192\.168\.10\.12 is missing/);
    expect(sick.stdout).toMatch(/cluster-entry-stale\s+10\.250\.0\.0\/24/);

    // The next read of the kernel (a restart here; every resyncSec in a running ferryd) repairs both.
    await n1.ferryd.start();
    await waitSynced(n1);
    expect(await ferryctl(n1.ferryd, 'doctor')).toMatchObject({ exitCode: 0 });
    expect(await inNetnsTry(n1.node, 'ip', 'route', 'show', '10.250.0.0/24')).toMatchObject({ stdout: '' });

    // Another owner's route to a peer's CIDR, there before ferryd starts: ferryd leaves it and says why.
    await n1.ferryd.stop();
    await inNetns(n1.node, 'ip', 'route', 'del', '10.244.3.0/24', 'proto', PROTO);
    await inNetns(n1.node, 'ip', 'route', 'add', '10.244.3.0/24', 'via', '192.168.10.99', 'proto', 'static');
    await n1.ferryd.start();
    await waitSynced(n1);
    expect(await inNetns(n1.node, 'ip', 'route', 'show', '10.244.3.0/24')).toMatch(
      /via 192\.168\.10\.99 .*proto static/,
    );
    const blocked = JSON.parse((await ferryctl(n1.ferryd, 'nodes', '--json')).stdout);
    expect(blocked.peers[1].entries).toContainEqual(
      expect.objectContaining({
        key: '10.244.3.0/24',
        state: 'refused',
        reason: expect.stringMatching(/another owner's route/),
      }),
    );
  });

  test("a peer that is not on the link shows as refused, with the kernel's reason, and the others are routed", async (t) => {
    const { nodes } = await useCluster(t, { routing: 'host-gw', nodes: 3, topology: 'l3' });
    const [n1] = nodes as [ClusterNode];
    await waitSynced(n1);
    const json = JSON.parse((await ferryctl(n1.ferryd, 'nodes', '--json')).stdout);
    const node3 = json.peers.find((p: { name: string }) => p.name === 'node-3');
    expect(node3.state).toBe('degraded');
    expect(node3.entries).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          kind: 'route',
          key: '10.244.3.0/24',
          state: 'refused',
          reason: expect.stringMatching(/gateway/i),
        }),
      ]),
    );
    expect(json.peers.find((p: { name: string }) => p.name === 'node-2').state).toBe('ok');
    const doctor = await ferryctl(n1.ferryd, 'doctor');
    expect(doctor.exitCode).toBe(1);
    expect(doctor.stdout).toMatch(/peer-entry-missing\s+node-3/);
  });
});

test('a running ferryd repairs its routes at every resync: a deleted one comes back, a stray one goes', async (t) => {
  const { nodes } = await useCluster(t, { routing: 'host-gw', nodes: 2, topology: 'l2', cluster: { resyncSec: 1 } });
  const [n1] = nodes as [ClusterNode];
  await waitSynced(n1);
  const before = await ferryRoutes(n1);
  await inNetns(n1.node, 'ip', 'route', 'del', '10.244.2.0/24', 'proto', PROTO);
  await inNetns(n1.node, 'ip', 'route', 'add', '10.250.0.0/24', 'via', '192.168.10.12', 'proto', PROTO);
  const syncs = JSON.parse((await ferryctl(n1.ferryd, 'nodes', '--json')).stdout).sync.syncs;
  // Two more syncs: at least one read the kernel after the changes above.
  await waitSynced(n1, syncs + 2);
  expect(await ferryRoutes(n1)).toEqual(before);
});

describe('vxlan', () => {
  test('every pod reaches every pod across an L3 hop, IPv4 and IPv6, through one VXLAN device per node', async (t) => {
    const { nodes } = await useCluster(t, { routing: 'vxlan', nodes: 3, topology: 'l3' });
    await Promise.all(nodes.map((n) => waitSynced(n)));
    const [n1] = nodes as [ClusterNode];
    const dev = JSON.parse(await inNetns(n1.node, 'ip', '-j', '-d', 'link', 'show', 'ferry.1'))[0];
    expect(dev.linkinfo).toMatchObject({
      info_kind: 'vxlan',
      info_data: { id: 1, port: 8472, learning: false, local: '192.168.10.11' },
    });
    expect(dev.mtu).toBe(1450);
    expect(
      (await ferryRoutes(n1)).map((r) => `${r.dst} via ${r.gateway} dev ${r.dev} ${r.flags?.join(',')}`).sort(),
    ).toEqual([
      '10.244.2.0/24 via 10.244.2.0 dev ferry.1 onlink',
      '10.244.3.0/24 via 10.244.3.0 dev ferry.1 onlink',
      'fd00:10:244:2::/64 via fd00:10:244:2:: dev ferry.1 onlink',
      'fd00:10:244:3::/64 via fd00:10:244:3:: dev ferry.1 onlink',
    ]);
    const fdb = JSON.parse(await inNetns(n1.node, 'bridge', '-j', 'fdb', 'show', 'dev', 'ferry.1'));
    expect(fdb.map((f: { dst: string }) => f.dst).sort()).toEqual(['192.168.10.12', '192.168.11.13']);
    await everyPodPingsEveryOther(await podsOn(t, nodes));
    const json = JSON.parse((await ferryctl(n1.ferryd, 'nodes', '--json')).stdout);
    expect(json.vxlan).toMatchObject({ device: 'ferry.1', local: '192.168.10.11' });
    expect(json.peers.every((p: { state: string }) => p.state === 'ok')).toBe(true);
    expect(await ferryctl(n1.ferryd, 'doctor')).toMatchObject({ exitCode: 0 });
  });

  test('over an IPv6 underlay (nodes known only by IPv6 addresses), IPv4 and IPv6 pods reach each other', async (t) => {
    const { nodes } = await useCluster(t, { routing: 'vxlan', nodes: 3, topology: 'l3', peerFamilies: [6] });
    await Promise.all(nodes.map((n) => waitSynced(n)));
    const [n1] = nodes as [ClusterNode];
    const dev = JSON.parse(await inNetns(n1.node, 'ip', '-j', '-d', 'link', 'show', 'ferry.1'))[0];
    expect(dev.linkinfo.info_data).toMatchObject({ local6: 'fd00:168:10::11' });
    expect(dev.mtu).toBe(1430);
    const fdb = JSON.parse(await inNetns(n1.node, 'bridge', '-j', 'fdb', 'show', 'dev', 'ferry.1'));
    expect(fdb.map((f: { dst: string }) => f.dst).sort()).toEqual(['fd00:168:10::12', 'fd00:168:11::13']);
    await everyPodPingsEveryOther(await podsOn(t, nodes));
  });
});
