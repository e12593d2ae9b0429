/**
 * ferryd's routes outlive ferryd: killed, it withdraws nothing; restarted, it reads what the kernel
 * holds and changes only what differs (nothing flaps), repairs its own, removes a departed peer's, and
 * never touches a route of another protocol.
 */
import { expect, test } from 'vitest';
import {
  addPod,
  type ClusterNode,
  patchClusterConfig,
  useCluster,
  useRouteMonitor,
  waitSynced,
} from '../fixtures/cluster';
import { ping } from '../fixtures/kernel';
import { inNetns, inNetnsTry } from '../fixtures/netns';
import { DIST_BIN } from '../fixtures/paths';

const ferryRoutes = async (n: ClusterNode) => {
  const out: string[] = [];
  for (const family of ['-4', '-6']) {
    const list: { dst: string; gateway?: string }[] = JSON.parse(
      await inNetns(n.node, 'ip', '-j', family, 'route', 'show', 'proto', '117'),
    );
    out.push(...list.map((r) => `${r.dst} via ${r.gateway}`));
  }
  return out.sort();
};

test.for(['host-gw', 'vxlan'] as const)(
  '%s: kill and restart withdraw nothing and flap nothing; a departed peer loses its routes, nobody else does; uninstall takes the rest',
  async (routing, t) => {
    const { nodes } = await useCluster(t, { routing, nodes: 3, topology: 'l2' });
    await Promise.all(nodes.map((n) => waitSynced(n)));
    const [n1, n2, n3] = nodes as [ClusterNode, ClusterNode, ClusterNode];
    const [p1, p2] = [await addPod(t, n1), await addPod(t, n2)];
    const before = await ferryRoutes(n1);
    expect(before).toHaveLength(4);
    // A route of another owner, to the same kind of destination: ferryd must leave it alone.
    await inNetns(n1.node, 'ip', 'route', 'add', '10.99.0.0/24', 'via', '192.168.10.12', 'proto', 'static');

    const monitor = await useRouteMonitor(t, n1.node);
    await n1.ferryd.kill('SIGKILL');
    expect(await ferryRoutes(n1), 'routes while ferryd is down').toEqual(before);
    expect(await ping(p1.netns, p2.ipv4), 'traffic while ferryd is down').toBe(true);
    await n1.ferryd.start();
    await waitSynced(n1);
    const seen = await monitor.stop();
    expect(
      seen.split('\n').filter((l) => /10\.244\.|fd00:10:244:/.test(l)),
      'route events across the restart',
    ).toEqual([]);
    expect(await ferryRoutes(n1)).toEqual(before);
    expect(await ping(p1.netns, p2.ipv6)).toBe(true);

    // node-3 leaves the static list: its routes (and, for vxlan, its neighbour and FDB entries) go.
    await n1.ferryd.stop();
    patchClusterConfig(n1, {
      peers: [n1, n2].map((n) => ({ name: n.name, addresses: n.addresses, podCIDRs: n.podCIDRs })),
    });
    const monitor2 = await useRouteMonitor(t, n1.node);
    await n1.ferryd.start();
    await waitSynced(n1);
    const seen2 = (await monitor2.stop()).split('\n').filter((l) => /10\.244\.|fd00:10:244:/.test(l));
    expect(
      seen2.every((l) => l.startsWith('Deleted') && /10\.244\.3\.|fd00:10:244:3:/.test(l)),
      seen2.join('\n'),
    ).toBe(true);
    expect(seen2).toHaveLength(2);
    expect(await ferryRoutes(n1)).toEqual(before.filter((r) => !/10\.244\.3\.|fd00:10:244:3:/.test(r)));
    expect(await inNetns(n1.node, 'ip', 'route', 'show', '10.99.0.0/24')).toContain('proto static');
    if (routing === 'vxlan') {
      const fdb = JSON.parse(await inNetns(n1.node, 'bridge', '-j', 'fdb', 'show', 'dev', 'ferry.1'));
      expect(fdb.map((f: { dst: string }) => f.dst)).toEqual([n2.addresses[0]]);
      const neigh = JSON.parse(await inNetns(n1.node, 'ip', '-j', 'neigh', 'show', 'dev', 'ferry.1'));
      expect(neigh.map((e: { dst: string }) => e.dst).sort()).toEqual(['10.244.2.0', 'fd00:10:244:2::']);
    }
    expect(n3.name).toBe('node-3');
    expect(await ping(p1.netns, p2.ipv4)).toBe(true);

    // Uninstall: Ferry's routes and the VXLAN device go, the foreign route stays; a second run finds nothing.
    await n1.ferryd.stop();
    const uninstall = () => inNetns(n1.node, `${DIST_BIN}/ferryd`, '--uninstall', '--config', n1.ferryd.configPath);
    expect(await uninstall()).toContain('ferryd: uninstalled: 2 routes with proto 117 deleted');
    expect(await ferryRoutes(n1)).toEqual([]);
    expect(await inNetnsTry(n1.node, 'ip', 'link', 'show', 'ferry.1')).toMatchObject({ exitCode: 1 });
    expect(await inNetns(n1.node, 'ip', 'route', 'show', '10.99.0.0/24')).toContain('proto static');
    expect(await uninstall()).toContain('0 routes with proto 117 deleted, VXLAN device absent');
  },
);
