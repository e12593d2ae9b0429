/**
 * Egress through ferryd (`cluster.masquerade`): two host-gw nodes and an "outside" host on the same
 * underlay that has no route to any pod CIDR. A pod reaches the outside only because its traffic leaves
 * with its node's address, and the outside sees that address; pod to pod across nodes keeps the pod's own.
 * `ferryd --uninstall` takes the rules away again.
 */
import { expect, test } from 'vitest';
import { addPod, type ClusterNode, useCluster, waitSynced } from '../fixtures/cluster';
import { ferryctl } from '../fixtures/ferryctl';
import { inNetns, inNetnsTry, useNetns, useVeth } from '../fixtures/netns';
import { DIST_BIN } from '../fixtures/paths';
import { useWhoAmIServer, whoAmI } from '../fixtures/whoami';

const OUTSIDE = { 4: '192.168.10.100', 6: 'fd00:168:10::100' };

test('pod to outside leaves with the node address, pod to pod keeps the pod address (IPv4 and IPv6); uninstall removes the rules', async (t) => {
  const { underlay, nodes } = await useCluster(t, { routing: 'host-gw', nodes: 2, topology: 'l2', masquerade: true });
  const [n1, n2] = nodes as [ClusterNode, ClusterNode];
  const outside = await useNetns(t, 'out');
  await useVeth(outside, 'eth0', underlay, 'out0');
  await inNetns(underlay, 'ip', 'link', 'set', 'out0', 'master', 'br0');
  await inNetns(outside, 'ip', 'addr', 'add', `${OUTSIDE[4]}/24`, 'dev', 'eth0');
  await inNetns(outside, 'ip', 'addr', 'add', `${OUTSIDE[6]}/64`, 'dev', 'eth0', 'nodad');
  await Promise.all(nodes.map((n) => waitSynced(n)));
  const [p1, p2] = [await addPod(t, n1), await addPod(t, n2)];
  const outPort = await useWhoAmIServer(t, outside);
  const podPort = await useWhoAmIServer(t, p2.netns);

  expect(await whoAmI(p1.netns, OUTSIDE[4], outPort)).toBe(n1.addresses[0]);
  expect(await whoAmI(p1.netns, OUTSIDE[6], outPort)).toBe(n1.addresses[1]);
  expect(await whoAmI(p1.netns, p2.ipv4, podPort)).toBe(p1.ipv4);
  expect(await whoAmI(p1.netns, p2.ipv6, podPort)).toBe(p1.ipv6);
  const report = JSON.parse((await ferryctl(n1.ferryd, 'nodes', '--json')).stdout);
  expect(report.egress).toBe('masquerade (nft)');

  await n1.ferryd.stop();
  const out = await inNetns(n1.node, `${DIST_BIN}/ferryd`, '--uninstall', '--config', n1.ferryd.configPath);
  expect(out).toContain('masquerade removed');
  expect(await inNetnsTry(n1.node, 'nft', 'list', 'table', 'inet', 'ferry')).toMatchObject({ exitCode: 1 });
  // Without the rules (and without routes) the outside no longer answers the pod.
  expect(await whoAmI(p1.netns, OUTSIDE[4], outPort)).toBeUndefined();
});
