/**
 * Cluster IPAM through real ferryd processes: three nodes (namespaces) against one Kubernetes API
 * stand-in serving Ferry's CRDs, each network's pool a cluster-wide range the nodes claim blocks of
 * (IPBlocks, create-if-absent). Pods are added by the real shim on every node at once; the addresses are
 * read back from the pods' kernels and must be unique cluster-wide, static addresses (asked for by pods'
 * ferry.dev/nics, claimed cluster-wide as IPClaims, one handed from node to node amid the churn) included;
 * pods reach each other over routes to blocks claimed at runtime (host-gw and VXLAN); the API server
 * stopped, ADDs go on from the blocks held; a database lost, the blocks and live addresses are learned
 * again; a block edited by hand is refused.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { type BlocksReport, BlocksReportSchema } from '@ferry/shared-types/api/blocks';
import { describe, expect, test } from 'vitest';
import { type ClusterNode, everyPodPingsEveryOther, type Pod, useCluster, waitSynced } from '../fixtures/cluster';
import { netConf, newContainerId } from '../fixtures/conf';
import { type TestDevice, useDevices } from '../fixtures/device';
import { ferryctl } from '../fixtures/ferryctl';
import { linkNames, ping } from '../fixtures/kernel';
import { type KubeApi, nodeObject, podObject } from '../fixtures/kube-api';
import { inNetns, useNetns } from '../fixtures/netns';
import { podCniArgs } from '../fixtures/network-status';
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

/** A secondary network (`infraNIC: false`, Ferry as a Multus delegate) whose range is split into blocks too. */
const STORAGE = {
  name: 'storage',
  infraNIC: false,
  ipv4: { subnet: '10.250.0.0/16', blocks: { prefixLength: 28, minFree: 2 } },
};
/** Each node's devices for it (veth stand-ins), one per pod. */
const STORAGE_DEVICES: TestDevice[] = [1, 2, 3, 4].map((i) => ({ name: `ens4f${i}`, mac: `02:fe:00:00:d0:0${i}` }));

/** Delegated devices (veth stand-ins) of the group "frontend", the one pods ask static addresses on. */
const FRONTEND_DEVICES: TestDevice[] = [1, 2, 3].map((i) => ({ name: `ens1f${i}`, mac: `02:fe:00:00:a0:0${i}` }));
/** The frontend group and a static-address range for each of two namespaces. */
const TENANCY = {
  deviceGroups: [{ group: 'frontend', namespaces: ['team-a', 'team-b'] }],
  staticAddresses: [
    { namespaces: ['team-a'], ranges: ['198.51.100.0/28'] },
    { namespaces: ['team-b'], ranges: ['198.51.100.16/28'] },
  ],
};

/**
 * The cluster, its API stand-in and the nodes; peers come from the API's Node objects (no podCIDRs). With
 * `secondary`, every node also has the storage network and its devices; with `statics`, the frontend
 * devices, TENANCY and a pod watch, for pods asking static addresses; `reclaimSec`, the reclaimer's period
 * (ferryd's default: 30 s), for a test that waits on its passes.
 */
async function useIpamCluster(
  t: Scope,
  routing: 'host-gw' | 'vxlan',
  opts: { secondary?: boolean; statics?: boolean; reclaimSec?: number } = {},
): Promise<{ api: KubeApi; nodes: ClusterNode[] }> {
  const delegated = [
    ...(opts.secondary ? STORAGE_DEVICES.map((d) => ({ mac: d.mac, group: 'storage' })) : []),
    ...(opts.statics ? FRONTEND_DEVICES.map((d) => ({ mac: d.mac, group: 'frontend' })) : []),
  ];
  const { api, nodes } = await useCluster(t, {
    routing,
    nodes: 3,
    topology: routing === 'vxlan' ? 'l3' : 'l2',
    kube: { podCIDRs: false, pods: opts.statics ?? false },
    networks: opts.secondary ? () => [...blockNetworks()(), STORAGE] : blockNetworks(),
    ...(opts.reclaimSec ? { cluster: { reclaimSec: opts.reclaimSec } } : {}),
    ferryd: {
      ...(delegated.length > 0 ? { delegatedDevices: delegated } : {}),
      ...(opts.statics ? { tenancy: TENANCY } : {}),
    },
  });
  if (!api) throw new Error('no API stand-in');
  if (opts.secondary) for (const n of nodes) await useDevices(t, n.node, n.ferryd, STORAGE_DEVICES);
  if (opts.statics) for (const n of nodes) await useDevices(t, n.node, n.ferryd, FRONTEND_DEVICES);
  return { api, nodes };
}

/** The pod annotation asking a frontend device with static `addresses`. */
const nics = (addresses: string[]) => ({ 'ferry.dev/nics': JSON.stringify([{ group: 'frontend', addresses }]) });

/** A Pod asking static `addresses` put in the API, then added on `n` by the real shim (the call kept, to retry or DEL). */
async function addStaticPod(
  t: Scope,
  api: KubeApi,
  n: ClusterNode,
  namespace: string,
  name: string,
  addresses: string[],
) {
  const { uid } = await api.putPod(podObject(namespace, name, n.name, nics(addresses)));
  const netns = await useNetns(t, 'pod');
  const call = {
    containerId: newContainerId(),
    ifName: 'eth0',
    netns,
    conf: netConf(n.ferryd),
    cniArgs: podCniArgs(namespace, name, uid),
  };
  return { call, add: await runShim(n.node, 'ADD', call) };
}

/** The IPClaims in the API server, as `address pod node`. */
async function claimsInApi(api: KubeApi): Promise<string[]> {
  return (await api.listObjects(IPAM_API, 'IPClaim'))
    .map((o) => {
      const spec = o.spec as { address: string; node: string; pod: { name: string } };
      return `${spec.address} ${spec.pod.name} ${spec.node}`;
    })
    .sort();
}

/** The pod's storage attachment (net1), as Multus adds a delegate: the device from the conflist's delegatedNICs. */
async function addStorage(n: ClusterNode, pod: AddedPod): Promise<string> {
  const r = await runShim(n.node, 'ADD', {
    containerId: pod.containerId,
    ifName: 'net1',
    netns: pod.netns,
    conf: netConf(n.ferryd, { name: 'storage', delegatedNICs: { group: 'storage', count: 1 } }),
  });
  if (r.exitCode !== 0) throw new Error(`ADD net1 on ${n.name}: ${r.stdout}`);
  return ((r.json as { ips: { address: string }[] }).ips[0]?.address ?? '').split('/')[0] ?? '';
}

interface AddedPod extends Pod {
  containerId: string;
  /** Its secondary network's address, when it has one. */
  storage?: string;
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

/** The global addresses the pod's interface carries, as its kernel says. */
async function kernelAddresses(pod: Pick<Pod, 'netns'>, dev = 'eth0'): Promise<string[]> {
  const list: { addr_info: { local: string; scope: string }[] }[] = JSON.parse(
    await inNetns(pod.netns, 'ip', '-j', 'addr', 'show', 'dev', dev),
  );
  return list.flatMap((l) => l.addr_info.filter((a) => a.scope === 'global').map((a) => a.local));
}

/** Every global address in the pod's namespace, whatever the interface, as its kernel says. */
async function addressesIn(netns: Pod['netns']): Promise<string[]> {
  const list: { addr_info: { local: string; scope: string }[] }[] = JSON.parse(
    await inNetns(netns, 'ip', '-j', 'addr'),
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

/**
 * The node's blocks report (what `ferryctl blocks --json` prints), asked of ferryd directly: the polls
 * below ask every 100 ms, and a ferryctl process per poll cost more CPU than the rest of the test.
 */
async function blocksOf(n: ClusterNode): Promise<BlocksReport> {
  const r = await n.ferryd.request('GET', '/v1/operator/blocks');
  expect(r.status, r.body).toBe(200);
  return BlocksReportSchema.parse(r.json);
}

/** Polls `check` until it holds (bounded: a hang fails with what was seen last). */
async function eventually<T>(
  what: string,
  read: () => Promise<T>,
  check: (v: T) => boolean,
  ceilingMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + ceilingMs;
  let last: T = await read();
  while (!check(last)) {
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 100));
    last = await read();
  }
  return last;
}

/**
 * The stand-in authorizes every request as RBAC authorizes Ferry's service account from deploy/rbac.yaml
 * (test/fixtures/kube-api.ts): none the ferryds made on Ferry's objects and the Lease was refused.
 */
async function expectGranted(api: KubeApi): Promise<void> {
  expect((await api.stats()).forbidden).toEqual([]);
}

/** A pod of team-a holding a static address (on its frontend device), and the CNI call that added it. */
interface StaticPod {
  on: ClusterNode;
  name: string;
  address: string;
  call: Awaited<ReturnType<typeof addStaticPod>>['call'];
}

/** A promise with its resolve, for one node's churn to wait on another's step. */
function signal(): { done: Promise<void>; resolve: () => void } {
  let resolve = () => {};
  const done = new Promise<void>((r) => {
    resolve = r;
  });
  return { done, resolve };
}

describe.for(['host-gw', 'vxlan'] as const)('%s', (routing) => {
  test('pod churn on every node at once, a primary and a secondary network and static addresses (one handed over to another node mid-churn): 0 duplicate addresses cluster-wide (from the kernels), each static address in one pod and its IPClaim; pods reach each other over blocks claimed at runtime', async (t) => {
    // Some 40 shim calls a node, the three nodes at once: past the default 120 s on a loaded 2-core machine.
    const { api, nodes } = await useIpamCluster(t, routing, { secondary: true, statics: true });
    await Promise.all(nodes.map((n) => waitSynced(n)));
    // Three rounds on every node at once: add 12, delete half, add 6 more (blocks fill, new ones are claimed).
    // Amid them each node adds two pods of team-a with static addresses (distinct, from its range), the
    // second handed over: the next node's pod asks for it, is refused while it is held, and gets it once
    // the first is gone (DEL, then its Pod deleted).
    const live = new Map<ClusterNode, AddedPod[]>(nodes.map((n) => [n, []]));
    const statics: StaticPod[] = [];
    const held = nodes.map(() => signal());
    const refused = nodes.map(() => signal());
    await Promise.all(
      nodes.map(async (n, at) => {
        const prev = (at + nodes.length - 1) % nodes.length;
        const next = (at + 1) % nodes.length;
        const addStatic = async (name: string, address: string) => {
          const r = await addStaticPod(t, api, n, 'team-a', name, [`${address}/28`]);
          expect(r.add.exitCode, `${name} ${r.add.stdout}`).toBe(0);
          return { on: n, name, address, call: r.call };
        };
        const pods = live.get(n) ?? [];
        for (let i = 0; i < 12; i++) pods.push(await addPod(t, n));
        const kept = await addStatic(`web-${n.name}-a`, `198.51.100.${1 + 2 * at}`);
        const given = await addStatic(`web-${n.name}-b`, `198.51.100.${2 + 2 * at}`);
        held[at]?.resolve();
        for (const p of pods.splice(0, 6)) await delPod(n, p);

        // The previous node's second address, asked for while its pod holds it: refused, the owner named.
        await held[prev]?.done;
        const owner = `web-${nodes[prev]?.name}-b`;
        const wanted = `198.51.100.${2 + 2 * prev}`;
        const ask = await addStaticPod(t, api, n, 'team-a', `web-${n.name}-c`, [`${wanted}/28`]);
        expect(ask.add.json, ask.add.stdout).toMatchObject({
          code: 116,
          msg: expect.stringContaining(`${wanted} is held by pod team-a/${owner} on node ${nodes[prev]?.name}`),
        });
        expect(await linkNames(ask.call.netns)).toEqual(['lo']);
        refused[at]?.resolve();

        // This node's second static pod goes once the next node was refused its address.
        await refused[next]?.done;
        const del = await runShim(n.node, 'DEL', given.call);
        expect(del.exitCode, del.stdout).toBe(0);
        await api.deletePod('team-a', given.name);
        for (let i = 0; i < 6; i++) pods.push(await addPod(t, n));
        // Four of them also on the secondary network (one device each).
        for (const p of pods.slice(0, 4)) p.storage = await addStorage(n, p);

        // The previous node's pod gone, its address is given here.
        await eventually(
          `${wanted} given back by ${owner}`,
          () => claimsInApi(api),
          (c) => !c.some((x) => x.startsWith(`${wanted} ${owner} `)),
        );
        const retry = await runShim(n.node, 'ADD', ask.call);
        expect(retry.exitCode, retry.stdout).toBe(0);
        statics.push(kept, { on: n, name: `web-${n.name}-c`, address: wanted, call: ask.call });
      }),
    );
    const all = [...live.entries()].flatMap(([n, pods]) => pods.map((pod) => ({ on: n.name, pod })));
    expect(all).toHaveLength(36);
    expect(statics).toHaveLength(6);
    const seen = new Map<string, string>();
    const duplicates: string[] = [];
    const count = (on: string, have: string[]) => {
      for (const a of have) {
        if (seen.has(a)) duplicates.push(`${a} on ${seen.get(a)} and ${on}`);
        seen.set(a, on);
      }
    };
    for (const { on, pod } of all) {
      const have = await kernelAddresses(pod);
      expect(have.sort()).toEqual([pod.ipv4, pod.ipv6].sort());
      if (pod.storage) {
        const net1 = await kernelAddresses(pod, 'net1');
        expect(net1).toEqual([pod.storage]);
        expect(pod.storage.startsWith('10.250.')).toBe(true);
        have.push(...net1);
      }
      // Nothing on any other interface of the pod.
      expect((await addressesIn(pod.netns)).sort()).toEqual(have.sort());
      count(on, have);
    }
    // A static pod: its primary addresses on eth0, its static address on its frontend device, nothing else.
    const holders = new Map<string, string[]>();
    for (const s of statics) {
      const eth0 = await kernelAddresses(s.call);
      expect(eth0.filter((a) => a.startsWith('10.244.') || a.startsWith('fd00:10:244:'))).toHaveLength(2);
      const have = await addressesIn(s.call.netns);
      expect(have.sort()).toEqual([...eth0, s.address].sort());
      count(`${s.on.name} (${s.name})`, have);
    }
    for (const p of [...all.map((x) => x.pod.netns), ...statics.map((s) => s.call.netns)]) {
      for (const a of (await addressesIn(p)).filter((x) => x.startsWith('198.51.100.')))
        holders.set(a, [...(holders.get(a) ?? []), p.name]);
    }
    // Each static address in exactly one pod's kernel, the one that asked for it, and its IPClaim names that pod.
    expect([...holders.keys()].sort()).toEqual(statics.map((s) => s.address).sort());
    for (const s of statics) expect(holders.get(s.address), s.address).toEqual([s.call.netns.name]);
    expect(await claimsInApi(api)).toEqual(statics.map((s) => `${s.address} ${s.name} ${s.on.name}`).sort());
    expect(duplicates).toEqual([]);
    // 36 pods' two primary addresses, 12 storage addresses, 6 static pods' primary and static addresses.
    expect(seen.size).toBe(72 + 12 + 6 * 3);

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
    const report = await blocksOf(nodes[0] as ClusterNode);
    expect(report.ranges.map((r) => `${r.network} IPv${r.family}`)).toEqual([
      'ferry IPv4',
      'ferry IPv6',
      'storage IPv4',
    ]);

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
    // A secondary network's blocks are not routed: its pods sit on their devices' own segment.
    for (const n of nodes)
      expect(await inNetns(n.node, 'ip', '-4', 'route', 'show', 'proto', '117')).not.toContain('10.250.');
    await everyPodPingsEveryOther(nodes.map((n) => ({ on: n.name, pod: live.get(n)?.[0] as Pod })));
  }, 240_000);
});

/** The blocks `n` holds (`cidr state`). */
async function heldBy(n: ClusterNode): Promise<string[]> {
  const r = await blocksOf(n);
  return r.ranges.flatMap((g) => g.blocks.map((b) => `${b.cidr} ${b.state}`)).sort();
}

test('the API server stopped: ADDs go on from the blocks held; a database lost: blocks and live addresses are learned again', async (t) => {
  const { api, nodes } = await useIpamCluster(t, 'host-gw');
  const [n1] = nodes as [ClusterNode];
  const first = await addPod(t, n1);
  const held = await eventually(
    'node-1 holds a block of each range',
    () => heldBy(n1),
    (h) => h.length >= 2,
  );
  await api.stop();
  // Room in the blocks held (15 addresses, minFree 4): the ADDs never ask the API server.
  const during = [];
  for (let i = 0; i < 5; i++) during.push(await addPod(t, n1));
  const addresses = [first, ...during].flatMap((p) => [p.ipv4, p.ipv6]);
  expect(new Set(addresses).size).toBe(12);
  expect(await heldBy(n1)).toEqual(held);
  const status = await blocksOf(n1);
  expect(status.ranges.every((g) => g.blocks.length > 0)).toBe(true);
  await api.start();

  // The database lost while the pods live: the blocks come back from the API server, the addresses from
  // the kernel (the host veths' markers), and the next ADD gets an address no live pod has.
  await n1.ferryd.stop();
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${n1.ferryd.database}${suffix}`, { force: true });
  await n1.ferryd.start();
  await eventually(
    'node-1 re-learned its blocks',
    () => heldBy(n1),
    (h) => JSON.stringify(h) === JSON.stringify(held),
  );
  const live = await n1.ferryd.assignedAddresses();
  for (const a of addresses) expect(live).toContain(a);
  const next = await addPod(t, n1);
  expect(addresses).not.toContain(next.ipv4);
  expect(addresses).not.toContain(next.ipv6);
  // No block was claimed twice or taken from another node.
  const inApi = await blocksInApi(api);
  expect(inApi.filter((b) => b.startsWith('node-1 '))).toHaveLength(held.length);
});

test('three nodes claiming the last free block at once: exactly one gets it, the others are told the range is exhausted', async (t) => {
  // A /24 range of /28 blocks (16), 15 of them held by node-z before the nodes start; nothing claimed ahead.
  const { api, nodes } = await useCluster(t, {
    routing: 'host-gw',
    nodes: 3,
    topology: 'l2',
    kube: { podCIDRs: false },
    networks: () => [{ name: 'ferry', ipv4: { subnet: '10.244.0.0/24', blocks: { prefixLength: 28, minFree: 0 } } }],
  }).then(async (c) => {
    if (!c.api) throw new Error('no API stand-in');
    await c.api.put(nodeObject('node-z', ['192.168.10.99'], []));
    for (let i = 1; i < 16; i++) {
      const cidr = `10.244.0.${i * 16}/28`;
      await c.api.putObject({
        apiVersion: IPAM_API,
        kind: 'IPBlock',
        metadata: { name: `ferry.v4.10-244-0-${i * 16}-28` },
        spec: { network: 'ferry', family: 4, cidr, node: 'node-z' },
      });
    }
    return c;
  });
  if (!api) throw new Error('no API stand-in');
  await Promise.all(
    nodes.map((n) =>
      eventually(
        'the node sees the 15 blocks',
        () => blocksOf(n),
        (r) => r.ranges[0]?.cluster.blocksHeld === 15,
      ),
    ),
  );
  // Each node's ADD at once; one that hears 11 (the claim still in flight at its bound, on a loaded
  // machine) is tried again, as the runtime would.
  const results = await Promise.all(
    nodes.map(async (n) => {
      const call = {
        containerId: newContainerId(),
        ifName: 'eth0',
        netns: await useNetns(t, 'pod'),
        conf: netConf(n.ferryd),
      };
      let r = await runShim(n.node, 'ADD', call);
      for (let i = 0; i < 10 && r.exitCode !== 0 && (r.json as { code: number }).code === 11; i++)
        r = await runShim(n.node, 'ADD', call);
      return r;
    }),
  );
  const codes = results.map((r) => (r.exitCode === 0 ? 0 : (r.json as { code: number }).code)).sort();
  expect(codes).toEqual([0, 100, 100]);
  for (const r of results.filter((x) => x.exitCode !== 0))
    expect((r.json as { msg: string }).msg).toMatch(/range 10\.244\.0\.0\/24 is exhausted/);
  const lastBlock = (await blocksInApi(api)).filter((b) => b.endsWith(' 10.244.0.0/28'));
  expect(lastBlock).toHaveLength(1);
  const winner = nodes[codes.indexOf(0) === -1 ? 0 : results.findIndex((r) => r.exitCode === 0)] as ClusterNode;
  expect(lastBlock[0]).toBe(`${winner.name} 10.244.0.0/28`);
  await expectGranted(api);
});

test('a deleted node’s blocks are reclaimed only after its pods are gone; routes to them go with the Node', async (t) => {
  // The reclaimer is not woken by a pod's deletion: its next pass, a second later here, sees the node empty.
  const { api, nodes } = await useIpamCluster(t, 'host-gw', { reclaimSec: 1 });
  const [n1, , n3] = nodes as [ClusterNode, ClusterNode, ClusterNode];
  await addPod(t, n3);
  const ofN3 = await eventually(
    'node-3 holds blocks',
    () => blocksInApi(api),
    (b) => b.some((x) => x.startsWith('node-3 ')),
  );
  const n3Blocks = ofN3.filter((b) => b.startsWith('node-3 ')).map((b) => b.split(' ')[1] ?? '');
  await eventually(
    'node-1 routes to node-3’s blocks',
    () => inNetns(n1.node, 'ip', '-j', '-4', 'route', 'show', 'proto', '117'),
    (text) => n3Blocks.filter((c) => c.startsWith('10.')).every((c) => text.includes(`"${c}"`)),
  );
  // The node goes: its ferryd stops, its Node object is deleted, a pod bound to it is still in the API.
  await api.putPod(podObject('default', 'app-1-x', 'node-3'));
  await n3.ferryd.stop();
  await api.delete('node-3');
  const marked = await eventually(
    'the garbage collector marks node-3’s blocks',
    () => api.listObjects(IPAM_API, 'IPBlock'),
    (list) =>
      list.filter((o) => (o.spec as { node: string }).node === 'node-3').every((o) => o.metadata.deletionTimestamp),
  );
  expect(marked.filter((o) => (o.spec as { node: string }).node === 'node-3')).toHaveLength(n3Blocks.length);
  await eventually(
    'node-1 no longer routes to node-3’s blocks',
    () => inNetns(n1.node, 'ip', '-j', '-4', 'route', 'show', 'proto', '117'),
    (text) => n3Blocks.every((c) => !text.includes(`"${c}"`)),
  );
  // The reclaimer (whichever ferryd leads) keeps them while the pod exists: three passes later, still there.
  await new Promise((r) => setTimeout(r, 3000));
  expect((await blocksInApi(api)).filter((b) => b.startsWith('node-3 '))).toHaveLength(n3Blocks.length);
  await api.deletePod('default', 'app-1-x');
  await eventually(
    'node-3’s blocks released once its pods are gone',
    () => blocksInApi(api),
    (b) => !b.some((x) => x.startsWith('node-3 ')),
    60_000,
  );
  await expectGranted(api);
});

test('hostile IPBlocks are refused and nothing is built from them: an overlap, a block outside the range', async (t) => {
  const { api, nodes } = await useIpamCluster(t, 'host-gw');
  const [n1, n2] = nodes as [ClusterNode, ClusterNode];
  await addPod(t, n1);
  const mine = await eventually(
    'node-1 holds a v4 block',
    () => heldBy(n1),
    (h) => h.some((x) => x.startsWith('10.')),
  );
  const block = (mine.find((x) => x.startsWith('10.')) ?? '').split(' ')[0] ?? '';
  const over = `${block.split('.').slice(0, 3).join('.')}.0/24`;
  // Edited by hand: a /24 for node-2 over node-1's block (its right name), and a block outside the range.
  await api.putObject({
    apiVersion: IPAM_API,
    kind: 'IPBlock',
    metadata: { name: `ferry.v4.${over.replace(/[./]/g, '-')}` },
    spec: { network: 'ferry', family: 4, cidr: over, node: 'node-2' },
  });
  await api.putObject({
    apiVersion: IPAM_API,
    kind: 'IPBlock',
    metadata: { name: 'ferry.v4.10-9-0-0-28' },
    spec: { network: 'ferry', family: 4, cidr: '10.9.0.0/28', node: 'node-2' },
  });
  const report = await eventually(
    'node-2 reports both',
    () => blocksOf(n2),
    (r) => (r.ranges[0]?.conflicts.length ?? 0) >= 2,
  );
  expect(report.ranges[0]?.conflicts.join('\n')).toMatch(new RegExp(`${over.replace(/\./g, '\\.')} overlaps block`));
  expect(report.ranges[0]?.conflicts.join('\n')).toMatch(/10\.9\.0\.0\/28 is not inside the range 10\.244\.0\.0\/16/);
  // node-2 says so on the objects too: their Valid condition.
  const conditionOf = async (name: string) => {
    const o = await api.getObject({ apiVersion: IPAM_API, kind: 'IPBlock', name });
    return (
      o?.status as { conditions?: { type: string; status: string; reason: string }[] } | undefined
    )?.conditions?.find((c) => c.type === 'Valid');
  };
  await eventually(
    'the Valid conditions written',
    async () => [
      await conditionOf(`ferry.v4.${over.replace(/[./]/g, '-')}`),
      await conditionOf('ferry.v4.10-9-0-0-28'),
    ],
    (c) => c[0]?.reason === 'Overlap' && c[1]?.reason === 'OutsideRange',
  );
  // ferryctl blocks, as an operator reads it: the table, then the conflicts, exit 1.
  const text = await ferryctl(n2.ferryd, 'blocks');
  expect(text.exitCode).toBe(1);
  expect(text.stdout).toMatch(/NETWORK +FAMILY +RANGE +BLOCK +HELD +FREE +PENDING +CLUSTER +STATE/);
  expect(text.stdout).toMatch(/conflicts:\n {2}IPBlock ferry\.v4\./);
  const doctor = await ferryctl(n2.ferryd, 'doctor', '--json');
  expect(doctor.exitCode).toBe(1);
  expect(doctor.stdout).toContain('block-conflict');
  // Nothing of them is handed out on node-2, nor routed on node-1 or node-3.
  expect((await heldBy(n2)).some((b) => b.startsWith(over) || b.startsWith('10.9.'))).toBe(false);
  for (let i = 0; i < 4; i++) {
    const p = await addPod(t, n2);
    expect(p.ipv4.startsWith(block.split('.').slice(0, 3).join('.'))).toBe(false);
  }
  for (const n of [n1, nodes[2] as ClusterNode]) {
    const routes = await inNetns(n.node, 'ip', '-j', '-4', 'route', 'show', 'proto', '117');
    expect(routes).not.toContain(`"${over}"`);
    expect(routes).not.toContain('"10.9.0.0/28"');
  }
});

describe('static addresses', () => {
  test('claimed cluster-wide: the same address on another node is refused naming the owner pod and node, two nodes racing for one get it once, and it is given once its pod is gone; another tenant’s or a block’s address is refused and nothing is claimed', async (t) => {
    const { api, nodes } = await useCluster(t, {
      routing: 'host-gw',
      nodes: 2,
      topology: 'l2',
      kube: { podCIDRs: false, pods: true },
      networks: blockNetworks(),
      ferryd: {
        delegatedDevices: FRONTEND_DEVICES.map((d) => ({ mac: d.mac, group: 'frontend' })),
        tenancy: TENANCY,
      },
    });
    if (!api) throw new Error('no API stand-in');
    const [n1, n2] = nodes as [ClusterNode, ClusterNode];
    for (const n of nodes) await useDevices(t, n.node, n.ferryd, FRONTEND_DEVICES);
    const add = (n: ClusterNode, namespace: string, name: string, addresses: string[]) =>
      addStaticPod(t, api, n, namespace, name, addresses);
    const claims = () => claimsInApi(api);

    // Claimed (ahead, from the pod watch, or at the latest by the ADD) and used by the pod.
    const first = await add(n1, 'team-a', 'web-1', ['198.51.100.5/28']);
    expect(first.add.exitCode, first.add.stdout).toBe(0);
    expect(await claims()).toEqual(['198.51.100.5 web-1 node-1']);

    // The same address for a pod on node-2: refused before anything is built, the owner named.
    const second = await add(n2, 'team-a', 'web-2', ['198.51.100.5/28']);
    expect(second.add.exitCode).not.toBe(0);
    expect(second.add.json).toMatchObject({
      code: 116,
      msg: expect.stringContaining('198.51.100.5 is held by pod team-a/web-1 on node node-1'),
    });
    expect(await linkNames(second.call.netns)).toEqual(['lo']);

    // Another tenant's address, and one inside the cluster range: refused by tenancy, never claimed.
    for (const [name, address] of [
      ['web-3', '198.51.100.20/28'],
      ['web-4', '10.244.0.77/16'],
    ] as const) {
      const r = await add(n2, 'team-a', name, [address]);
      expect(r.add.json).toMatchObject({
        code: 116,
        msg: expect.stringContaining(`${address} is outside the ranges of namespace team-a`),
      });
      expect(await linkNames(r.call.netns)).toEqual(['lo']);
    }
    expect(await claims()).toEqual(['198.51.100.5 web-1 node-1']);

    // Pods on both nodes asking for one address at once: exactly one gets it, from its kernel's word.
    const race = await Promise.all([
      add(n1, 'team-b', 'db-1', ['198.51.100.21/28']),
      add(n2, 'team-b', 'db-2', ['198.51.100.21/28']),
    ]);
    expect(race.map((r) => r.add.exitCode === 0).sort()).toEqual([false, true]);
    const loser = race.find((r) => r.add.exitCode !== 0);
    expect(loser?.add.json).toMatchObject({
      code: 116,
      msg: expect.stringMatching(/198\.51\.100\.21 is held by pod team-b\/db-[12] on node node-[12]/),
    });
    const holders = [];
    for (const r of race) {
      const inPod = await addressesIn(r.call.netns);
      if (inPod.includes('198.51.100.21')) holders.push(r);
    }
    expect(holders).toHaveLength(1);

    // web-1 deleted (DEL, then its Pod): the claim goes, and web-2's next ADD gets the address.
    const del = await runShim(n1.node, 'DEL', first.call);
    expect(del.exitCode, del.stdout).toBe(0);
    await api.deletePod('team-a', 'web-1');
    await eventually('the claim given back', claims, (c) => !c.some((x) => x.startsWith('198.51.100.5 ')));
    const retry = await runShim(n2.node, 'ADD', second.call);
    expect(retry.exitCode, retry.stdout).toBe(0);
    expect((await claims()).filter((c) => c.startsWith('198.51.100.5 '))).toEqual(['198.51.100.5 web-2 node-2']);
    await expectGranted(api);
  });
});

test('an ADD whose node needs a block first waits for the claim and succeeds; the time it takes is printed beside an ADD with room', async (t) => {
  // minFree 0: nothing is claimed ahead, so the 1st and the 16th ADD (15 addresses a /28) each wait for a claim.
  const { nodes } = await useCluster(t, {
    routing: 'host-gw',
    nodes: 1,
    topology: 'l2',
    kube: { podCIDRs: false },
    networks: () => [
      { name: 'ferry', ipv4: { subnet: RANGE4, blocks: { prefixLength: 28, minFree: 0, maxFree: 16 } } },
    ],
  });
  const [n] = nodes as [ClusterNode];
  const timed: { ms: number; blocks: number }[] = [];
  for (let i = 0; i < 16; i++) {
    const t0 = performance.now();
    await addPod(t, n);
    timed.push({ ms: performance.now() - t0, blocks: (await heldBy(n)).length });
  }
  expect(timed.map((x) => x.blocks)).toEqual([...Array(15).fill(1), 2]);
  const withRoom = timed
    .slice(1, 15)
    .map((x) => x.ms)
    .sort((a, b) => a - b);
  console.log(
    `ADD (shim exec to result) needing a claim: ${timed[0]?.ms.toFixed(0)} ms and ${timed[15]?.ms.toFixed(0)} ms; with room: p50 ${withRoom[7]?.toFixed(0)} ms`,
  );
});

test('a running node moved from its podCIDRs to cluster IPAM keeps its pods’ addresses: the pool is re-based and the blocks under them claimed first', async (t) => {
  // Both nodes start as deploy/ installs them today: the pool is the Node's spec.podCIDRs.
  const { api, nodes } = await useCluster(t, {
    routing: 'host-gw',
    nodes: 2,
    topology: 'l2',
    kube: { podCIDRs: true },
  });
  if (!api) throw new Error('no API stand-in');
  const [n1, n2] = nodes as [ClusterNode, ClusterNode];
  const before = [await addPod(t, n1), await addPod(t, n1)];
  const other = await addPod(t, n2);
  const addresses = before.flatMap((p) => [p.ipv4, p.ipv6]);
  expect(addresses.filter((a) => a.startsWith('10.244.1.') || a.startsWith('fd00:10:244:1:'))).toHaveLength(4);

  // node-1's ferryd restarts with the cluster's ranges in blocks (docs/runbook.md's migration, one node).
  await n1.ferryd.stop();
  const config = JSON.parse(readFileSync(n1.ferryd.configPath, 'utf8'));
  config.networks = blockNetworks()();
  writeFileSync(n1.ferryd.configPath, JSON.stringify(config, null, 2));
  await n1.ferryd.start();
  // The live addresses are kept, and the blocks under them are the first node-1 claims.
  for (const p of before) expect((await kernelAddresses(p)).sort()).toEqual([p.ipv4, p.ipv6].sort());
  const live = await n1.ferryd.assignedAddresses();
  for (const a of addresses) expect(live).toContain(a);
  const held = await eventually(
    'node-1 holds the blocks under its live pods',
    () => heldBy(n1),
    (h) => h.includes('10.244.1.0/28 held') && h.includes('fd00:10:244:1::/124 held'),
  );
  // While its Node still has spec.podCIDRs, node-1 claims its new blocks inside them: a node not moved yet
  // (node-2) routes only the /24, and reaches every pod of node-1, old and new.
  const more = [];
  for (let i = 0; i < 20; i++) more.push(await addPod(t, n1));
  const now = await heldBy(n1);
  expect(now.filter((b) => b.startsWith('10.244.')).length).toBeGreaterThan(1);
  expect(now.filter((b) => b.startsWith('10.244.')).every((b) => b.startsWith('10.244.1.'))).toBe(true);
  expect(now.filter((b) => b.startsWith('fd00:')).every((b) => b.startsWith('fd00:10:244:1:'))).toBe(true);
  for (const p of more) expect(addresses).not.toContain(p.ipv4);
  expect(held.length).toBeGreaterThan(0);
  for (const p of [...before, ...more.slice(-2)]) expect(await ping(other.netns, p.ipv4), p.ipv4).toBe(true);
  expect((await blocksInApi(api)).every((b) => b.startsWith('node-1 '))).toBe(true);
});

test('capacity ahead of demand from the pod watch: pods bound to the node claim blocks before their ADDs arrive', async (t) => {
  const { api, nodes } = await useCluster(t, {
    routing: 'host-gw',
    nodes: 1,
    topology: 'l2',
    kube: { podCIDRs: false, pods: true },
    networks: () => [
      { name: 'ferry', ipv4: { subnet: RANGE4, blocks: { prefixLength: 28, minFree: 2, maxFree: 20 } } },
    ],
  });
  if (!api) throw new Error('no API stand-in');
  const [n] = nodes as [ClusterNode];
  const first = await eventually(
    'one block ahead of any pod',
    () => heldBy(n),
    (h) => h.length === 1,
  );
  expect(first).toHaveLength(1);
  // 40 pods scheduled onto the node (a Deployment scaled up), none of them added yet: 40 + minFree 2 in /28
  // blocks of 15 is 3 blocks, claimed in one batch, before the first of their ADDs.
  for (let i = 0; i < 40; i++) await api.putPod(podObject('default', `web-${i}`, n.name));
  const held = await eventually(
    'blocks for the pods on their way',
    () => heldBy(n),
    (h) => h.length >= 3,
  );
  expect(held.length).toBeGreaterThanOrEqual(3);
  const status = (await blocksOf(n)).ranges[0];
  expect(status?.pending).toBe(40);
  // A host-network pod is no demand, and a pod added is no longer on its way: once the watch holds the
  // host-network pod, one pod's ADD takes pending from 40 to 39, never to 40 again.
  const hostPod = podObject('default', 'host-1', n.name);
  await api.putPod({ ...hostPod, spec: { ...hostPod.spec, hostNetwork: true } });
  await eventually(
    'the watch holds host-1',
    async () => (await n.ferryd.request('GET', '/v1/operator/pods')).body,
    (out) => out.includes('"host-1"'),
  );
  const web0 = await api.getPod('default', 'web-0');
  const r = await runShim(n.node, 'ADD', {
    containerId: newContainerId(),
    ifName: 'eth0',
    netns: await useNetns(t, 'pod'),
    conf: netConf(n.ferryd),
    cniArgs: podCniArgs('default', 'web-0', web0?.metadata.uid ?? ''),
  });
  expect(r.exitCode, r.stdout).toBe(0);
  await eventually(
    'pending after one ADD',
    async () => (await blocksOf(n)).ranges[0]?.pending,
    (p) => p === 39,
  );
});

test('an empty block goes back after releaseAfterSec; with the API server away the release waits, across a restart, and nothing is lost', async (t) => {
  // cooldown 0, releaseAfterSec 1: a block emptied goes back a second later.
  const { api, nodes } = await useCluster(t, {
    routing: 'host-gw',
    nodes: 1,
    topology: 'l2',
    kube: { podCIDRs: false },
    networks: () => [
      {
        name: 'ferry',
        ipv4: { subnet: RANGE4, blocks: { prefixLength: 28, minFree: 2, maxFree: 20, releaseAfterSec: 1 } },
      },
    ],
    ferryd: { cooldownSec: 0 },
  });
  if (!api) throw new Error('no API stand-in');
  const [n] = nodes as [ClusterNode];
  const pods: AddedPod[] = [];
  for (let i = 0; i < 20; i++) pods.push(await addPod(t, n));
  const full = await eventually(
    'two blocks held',
    () => heldBy(n),
    (h) => h.length >= 2,
  );
  await api.stop();
  for (const p of pods) await delPod(n, p);
  // Empty and past releaseAfterSec: given back in ferryd (nothing is handed out of it), not yet in the API.
  await eventually(
    'a block releasing',
    () => heldBy(n),
    (h) => h.some((b) => b.endsWith(' releasing')),
  );
  await n.ferryd.stop();
  await n.ferryd.start();
  const waiting = await heldBy(n);
  expect(waiting.some((b) => b.endsWith(' releasing'))).toBe(true);
  await api.start();
  await eventually(
    'the release answered',
    () => heldBy(n),
    (h) => !h.some((b) => b.endsWith(' releasing')),
  );
  const objects = (await blocksInApi(api)).map((b) => b.replace('node-1 ', ''));
  expect(objects.sort()).toEqual((await heldBy(n)).map((b) => b.split(' ')[0]).sort());
  expect(objects.length).toBeLessThan(full.length);
});
