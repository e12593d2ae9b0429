/**
 * Cluster IPAM through real ferryd processes: three nodes (namespaces) against one Kubernetes API
 * stand-in serving Ferry's CRDs, each network's pool a cluster-wide range the nodes claim blocks of
 * (IPBlocks, create-if-absent). Pods are added by the real shim on every node at once; the addresses are
 * read back from the pods' kernels and must be unique cluster-wide; pods reach each other over routes to
 * blocks claimed at runtime (host-gw and VXLAN); the API server stopped, ADDs go on from the blocks held;
 * a database lost, the blocks and live addresses are learned again; a block edited by hand is refused.
 */
import { describe, expect, test } from 'vitest';
import { type ClusterNode, type Pod, useCluster, waitSynced } from '../fixtures/cluster';
import { netConf, newContainerId } from '../fixtures/conf';
import { ferryctl } from '../fixtures/ferryctl';
import { ping } from '../fixtures/kernel';
import type { KubeApi } from '../fixtures/kube-api';
import { inNetns, useNetns } from '../fixtures/netns';
import type { Scope } from '../fixtures/scope';
import { runShim } from '../fixtures/shim';

const RANGE4 = '10.244.0.0/16';
const RANGE6 = 'fd00:10:244::/56';
const IPAM_API = 'ferry.dev/v1alpha1';

/**
 * Every node's one network: the cluster's ranges in small blocks (/28 and /124: 15 addresses each), so a
 * dozen pods a node need several, claimed while the pods come.
 */
const blockNetworks =
  (blocks: Record<string, unknown> = {}) =>
  () => [
    {
      name: 'ferry',
      ipv4: { subnet: RANGE4, blocks: { prefixLength: 28, minFree: 4, releaseAfterSec: 3600, ...blocks } },
      ipv6: { subnet: RANGE6, blocks: { prefixLength: 124, minFree: 4, releaseAfterSec: 3600, ...blocks } },
    },
  ];

/** The cluster, its API stand-in and the nodes; pods come from the API's Node objects (no podCIDRs). */
async function useIpamCluster(
  t: Scope,
  routing: 'host-gw' | 'vxlan',
  blocks: Record<string, unknown> = {},
): Promise<{ api: KubeApi; nodes: ClusterNode[] }> {
  const { api, nodes } = await useCluster(t, {
    routing,
    nodes: 3,
    topology: routing === 'vxlan' ? 'l3' : 'l2',
    kube: { podCIDRs: false },
    networks: blockNetworks(blocks),
  });
  if (!api) throw new Error('no API stand-in');
  return { api, nodes };
}

interface AddedPod extends Pod {
  containerId: string;
}

/** A pod on `n` added by the real shim; the result's addresses (the shim's word; the kernel is read apart). */
async function addPod(t: Scope, n: ClusterNode): Promise<AddedPod> {
  const netns = await useNetns(t, 'pod');
  const containerId = newContainerId();
  const r = await runShim(n.node, 'ADD', { containerId, ifName: 'eth0', netns, conf: netConf(n.ferryd) });
  if (r.exitCode !== 0) throw new Error(`ADD on ${n.name}: ${r.stdout}`);
  const ips = (r.json as { ips: { address: string }[] }).ips.map((ip) => ip.address.split('/')[0] ?? '');
  return {
    netns,
    containerId,
    ipv4: ips.find((a) => !a.includes(':')) ?? '',
    ipv6: ips.find((a) => a.includes(':')) ?? '',
  };
}

async function delPod(n: ClusterNode, pod: AddedPod): Promise<void> {
  const r = await runShim(n.node, 'DEL', {
    containerId: pod.containerId,
    ifName: 'eth0',
    netns: pod.netns,
    conf: netConf(n.ferryd),
  });
  expect(r.exitCode, r.stdout).toBe(0);
}

/** The global addresses the pod's eth0 carries, as its kernel says. */
async function kernelAddresses(pod: Pod): Promise<string[]> {
  const list: { addr_info: { local: string; scope: string }[] }[] = JSON.parse(
    await inNetns(pod.netns, 'ip', '-j', 'addr', 'show', 'dev', 'eth0'),
  );
  return list.flatMap((l) => l.addr_info.filter((a) => a.scope === 'global').map((a) => a.local));
}

/** The IPBlocks in the API server, as `node cidr`. */
async function blocksInApi(api: KubeApi): Promise<string[]> {
  const list = await api.listObjects(IPAM_API, 'IPBlock');
  return list
    .map((o) => {
      const spec = o.spec as { node: string; cidr: string };
      return `${spec.node} ${spec.cidr}`;
    })
    .sort();
}

async function ferryctlBlocks(n: ClusterNode) {
  const r = await ferryctl(n.ferryd, 'blocks', '--json');
  expect(r.exitCode, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as {
    ranges: { network: string; family: 4 | 6; blocks: { cidr: string; state: string }[]; conflicts: string[] }[];
  };
}

/** Polls `check` until it holds (bounded: a hang fails with what was seen last). */
async function eventually<T>(what: string, read: () => Promise<T>, check: (v: T) => boolean): Promise<T> {
  const deadline = Date.now() + 20_000;
  let last: T = await read();
  while (!check(last)) {
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 100));
    last = await read();
  }
  return last;
}

async function everyPodPingsEveryOther(pods: { on: string; pod: Pod }[]): Promise<void> {
  const pairs = pods.flatMap((a) => pods.filter((b) => b.on !== a.on).map((b) => [a, b] as const));
  const results = await Promise.all(
    pairs.flatMap(([a, b]) =>
      ([4, 6] as const).map(async (family) => ({
        what: `${a.on} → ${b.on} IPv${family}`,
        ok: await ping(a.pod.netns, family === 4 ? b.pod.ipv4 : b.pod.ipv6),
      })),
    ),
  );
  expect(results.filter((r) => !r.ok).map((r) => r.what)).toEqual([]);
  expect(results.length).toBe(pairs.length * 2);
}

describe.for(['host-gw', 'vxlan'] as const)('%s', (routing) => {
  test('pod churn on every node at once: 0 duplicate addresses cluster-wide (from the kernels); pods reach each other over blocks claimed at runtime', async (t) => {
    const { api, nodes } = await useIpamCluster(t, routing);
    await Promise.all(nodes.map((n) => waitSynced(n)));
    // Three rounds on every node at once: add 12, delete half, add 6 more (blocks fill, new ones are claimed).
    const live = new Map<ClusterNode, AddedPod[]>(nodes.map((n) => [n, []]));
    await Promise.all(
      nodes.map(async (n) => {
        const pods = live.get(n) ?? [];
        for (let i = 0; i < 12; i++) pods.push(await addPod(t, n));
        for (const p of pods.splice(0, 6)) await delPod(n, p);
        for (let i = 0; i < 6; i++) pods.push(await addPod(t, n));
      }),
    );
    const all = [...live.entries()].flatMap(([n, pods]) => pods.map((pod) => ({ on: n.name, pod })));
    expect(all).toHaveLength(36);
    const seen = new Map<string, string>();
    const duplicates: string[] = [];
    for (const { on, pod } of all) {
      const have = await kernelAddresses(pod);
      expect(have.sort()).toEqual([pod.ipv4, pod.ipv6].sort());
      for (const a of have) {
        if (seen.has(a)) duplicates.push(`${a} on ${seen.get(a)} and ${on}`);
        seen.set(a, on);
      }
    }
    expect(duplicates).toEqual([]);
    expect(seen.size).toBe(72);

    // Every node holds blocks of both ranges, and no block twice.
    const inApi = await blocksInApi(api);
    const cidrs = inApi.map((b) => b.split(' ')[1]);
    expect(new Set(cidrs).size).toBe(cidrs.length);
    // 12 pods a node at the peak, 15 addresses a block: at least two blocks of each family on every node.
    for (const n of nodes) {
      expect(inApi.filter((b) => b.startsWith(`${n.name} 10.244.`)).length, inApi.join('\n')).toBeGreaterThanOrEqual(2);
      expect(
        inApi.filter((b) => b.startsWith(`${n.name} fd00:10:244:`)).length,
        inApi.join('\n'),
      ).toBeGreaterThanOrEqual(2);
    }
    // Each pod's address is inside a block its own node holds.
    const report = await ferryctlBlocks(nodes[0] as ClusterNode);
    expect(report.ranges.map((r) => `${r.network} IPv${r.family}`)).toEqual(['ferry IPv4', 'ferry IPv6']);

    // Routes to every other node's blocks (claimed at runtime, learned from the watch): one pod per node pings.
    await Promise.all(
      nodes.map((n) =>
        eventually(
          `${n.name} routes to the other nodes' blocks`,
          async () =>
            JSON.parse(await inNetns(n.node, 'ip', '-j', '-4', 'route', 'show', 'proto', '117')) as { dst: string }[],
          (routes) =>
            inApi
              .filter((b) => !b.startsWith(`${n.name} `) && b.includes(' 10.244.'))
              .every((b) => routes.some((r) => r.dst === b.split(' ')[1])),
        ),
      ),
    );
    await everyPodPingsEveryOther(nodes.map((n) => ({ on: n.name, pod: live.get(n)?.[0] as Pod })));
  });
});
