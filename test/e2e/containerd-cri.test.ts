/**
 * Ferry under the kubelet's real path: containerd 1.6's CRI plugin (libcni via go-cni) runs Ferry, and the
 * test makes the CRI calls the kubelet makes for a pod's life: RunPodSandbox → PodSandboxStatus (the pod's
 * IPs as the kubelet learns them) → StopPodSandbox, twice (the kubelet stops eagerly and again before it
 * removes) → RemovePodSandbox. InfraNIC pods run on the default runtime handler; a pod with a delegated NIC
 * runs on the handler "frontend", whose network asks for one (as a RuntimeClass would pick it). On a node
 * of a cluster (the stand-in API server holds the Pods, ferryd watches them) a pod asks for its NIC with
 * its `ferry.dev/nics` annotation instead, and a pod on the handler "multinet" has a secondary network
 * next to its eth0 (containerd's handler with two conflists: Ferry's primary as eth0, Ferry's
 * `infraNIC: false` network as eth1). Afterwards nothing may be left: links in the node, pod netns,
 * sandboxes, endpoints or Assigned addresses in ferryd (released addresses cooling down are fine: they are
 * checked to be the pods' own), queued DELs, devices away from home, Ferry's entries in network-status.
 */
import { existsSync, readdirSync } from 'node:fs';
import { AddressListSchema, EndpointListSchema } from '@ferry/shared-types/api/operator';
import { POD_NICS_ANNOTATION } from '@ferry/shared-types/kube/pod-nics';
import { describe, expect, test } from 'vitest';
import { ferryConflist } from '../fixtures/conf';
import { type Containerd, useContainerd } from '../fixtures/containerd';
import {
  mountsUnder,
  podCgroups,
  processesNaming,
  removeContainerdLeftovers,
  shimSocket,
} from '../fixtures/containerd-leftovers';
import { type TestDevice, useNodeWithDevices } from '../fixtures/device';
import { ferryctl } from '../fixtures/ferryctl';
import type { Ferryd } from '../fixtures/ferryd';
import { addresses, link, linkNames, routes } from '../fixtures/kernel';
import type { KubeApi } from '../fixtures/kube-api';
import type { TestNetns } from '../fixtures/netns';
import { ferryEntries, type StatusEntry, untilNetworkStatus } from '../fixtures/network-status';
import { useNode } from '../fixtures/node';
import { type GroupDevice, putPod, usePodNode } from '../fixtures/pod-node';
import { manualScope, type Scope } from '../fixtures/scope';

const DEVICES: TestDevice[] = [
  { name: 'eth3', mac: '02:fe:00:00:cc:01' },
  { name: 'eth4', mac: '02:fe:00:00:cc:02' },
];
const FRONTEND = 'frontend';
const MULTINET = 'multinet';

interface CriNode {
  node: TestNetns;
  ferryd: Ferryd;
  containerd: Containerd;
  devices: readonly TestDevice[];
  /** The node's links before any pod: the devices are on it, and nothing else but lo. */
  baseline: string[];
  /** The stand-in API server, on a node of a cluster. */
  api?: KubeApi;
}

async function expectCri(containerd: Containerd): Promise<void> {
  const version = await containerd.cri.version();
  expect([version.runtimeName, version.runtimeApiVersion], 'the CRI is runtime.v1').toEqual(['containerd', 'v1']);
}

async function useCriNode(t: Scope): Promise<CriNode> {
  // Released addresses stay PendingRelease for the whole test, so the end can check they are the pods' own.
  const { node, ferryd } = await useNodeWithDevices(t, DEVICES, { cooldownSec: 3600 });
  const containerd = await useContainerd(t, {
    node,
    conflist: ferryConflist(ferryd),
    handlers: { [FRONTEND]: ferryConflist(ferryd, { delegatedNICs: { group: 'frontend', count: 1 } }) },
  });
  await expectCri(containerd);
  return { node, ferryd, containerd, devices: DEVICES, baseline: await linkNames(node) };
}

interface PodSpec {
  name: string;
  /**
   * The runtime handler: '' (the default), FRONTEND (its network gives every pod a delegated NIC) or
   * MULTINET (two networks: eth0 and a secondary network's eth1).
   */
  handler: string;
  /** The Pod in the API server: the kubelet's PodSandboxConfig carries its UID and annotations. */
  kube?: { uid: string; annotations: Record<string, string> };
}

interface RunningPod extends PodSpec {
  id: string;
  /** The pod's netns as containerd reports it. */
  netns: TestNetns;
  ips: string[];
}

const podSpecs = (n: number, delegated: number): PodSpec[] =>
  Array.from({ length: n }, (_, i) => ({ name: `pod-${i}`, handler: i < delegated ? FRONTEND : '' }));

/** RunPodSandbox, then PodSandboxStatus; checks the sandbox is ready, on its handler, with an IP of each family. */
async function runPod(c: CriNode, spec: PodSpec): Promise<RunningPod> {
  const { cri } = c.containerd;
  const id = await cri.runPodSandbox(c.containerd.podConfig(spec.name, spec.kube), spec.handler);
  const { status } = await cri.podSandboxStatus(id);
  expect(status.state, spec.name).toBe('SANDBOX_READY');
  expect(status.runtimeHandler).toBe(spec.handler);
  const ips = [status.network?.ip ?? '', ...(status.network?.additionalIps ?? []).map((a) => a.ip)];
  expect(ips, `${spec.name}: one IPv4 and one IPv6 address through the CRI`).toEqual([
    expect.stringMatching(/^10\.244\.1\.\d+$/),
    expect.stringMatching(/^fd00:10:244:1::[0-9a-f]+$/),
  ]);
  return { ...spec, id, ips, netns: await c.containerd.sandboxNetns(id) };
}

/** What ferryd holds for the pod is what the CRI reported, and the pod's netns has it. */
async function expectPodWired(c: CriNode, pod: RunningPod): Promise<void> {
  const r = await c.ferryd.request('GET', `/v1/operator/endpoints?namespace=default&pod=${pod.name}`);
  const [endpoint, ...more] = EndpointListSchema.parse(r.json).endpoints;
  expect(more, `${pod.name}: one endpoint`).toEqual([]);
  expect(endpoint?.containerId, 'CNI_CONTAINERID is the sandbox ID').toBe(pod.id);
  const eth0 = endpoint?.interfaces.find((i) => i.ifName === 'eth0');
  expect(
    eth0?.addresses.map((a) => a.address.split('/')[0]),
    `${pod.name}: ferryd's addresses`,
  ).toEqual(pod.ips);
  expect(await addresses(pod.netns, 'eth0')).toEqual(eth0?.addresses.map((a) => a.address));
  if (pod.handler === FRONTEND) {
    const net1 = endpoint?.interfaces.find((i) => i.ifName === 'net1');
    expect(net1?.nicType).toBe('DelegatedNIC');
    expect((await link(pod.netns, 'net1'))?.address).toBe(net1?.deviceMac);
  }
}

/** The kubelet's teardown: StopPodSandbox twice, then RemovePodSandbox; each must succeed. */
async function tearDown(c: CriNode, pod: RunningPod): Promise<void> {
  const { cri } = c.containerd;
  await cri.stopPodSandbox(pod.id);
  await cri.stopPodSandbox(pod.id);
  await cri.removePodSandbox(pod.id);
}

async function queueState(ferryd: Ferryd): Promise<{ pending: number; failed: number }> {
  const q = (await ferryd.request('GET', '/v1/operator/queue')).json as { pending: unknown[]; failed: unknown[] };
  return { pending: q.pending.length, failed: q.failed.length };
}

/** `released`: addresses the pods had besides the eth0 addresses the CRI reported (a secondary network's). */
async function expectNothingLeft(c: CriNode, pods: RunningPod[], released: string[] = []): Promise<void> {
  expect(await c.containerd.cri.listPodSandbox(), 'sandboxes').toEqual([]);
  expect(c.containerd.podNetns(), 'pod netns').toEqual({ files: [], mounts: [] });
  expect(await linkNames(c.node), 'links in the node').toEqual(c.baseline);
  for (const d of c.devices) expect((await link(c.node, d.name))?.address, `${d.name} is home`).toBe(d.mac);

  const endpoints = EndpointListSchema.parse((await c.ferryd.request('GET', '/v1/operator/endpoints')).json);
  expect(endpoints.endpoints, 'endpoints in ferryd').toEqual([]);
  expect(await c.ferryd.assignedAddresses(), 'Assigned addresses').toEqual([]);
  // Released addresses cool down (PendingRelease) before reuse: each must be one the pods had.
  const cooling = AddressListSchema.parse(
    (await c.ferryd.request('GET', '/v1/operator/addresses?state=PendingRelease')).json,
  ).addresses.map((a) => a.address);
  expect(cooling.sort()).toEqual([...pods.flatMap((p) => p.ips), ...released].sort());
  expect(await queueState(c.ferryd), 'delete queue').toEqual({ pending: 0, failed: 0 });
  const devices = (await c.ferryd.request('GET', '/v1/operator/devices')).json as { devices: { state: string }[] };
  expect(devices.devices.map((d) => d.state)).toEqual(c.devices.map(() => 'free'));
  const doctor = await ferryctl(c.ferryd, 'doctor');
  expect(doctor.exitCode, doctor.stdout + doctor.stderr).toBe(0);
}

/** Runs `fn` over `items`, at most `limit` at a time. */
async function inBatches<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += limit) out.push(...(await Promise.all(items.slice(i, i + limit).map(fn))));
  return out;
}

describe.for([
  { how: 'one at a time', pods: 3, delegated: 1, limit: 1 },
  { how: '8 at a time', pods: 8, delegated: 2, limit: 8 },
])('containerd CRI, $how', ({ pods: n, delegated, limit }) => {
  test(`${n} pods (${delegated} with a delegated NIC): run → status → stop → stop → remove, nothing left`, async (t) => {
    const c = await useCriNode(t);
    const pods = await inBatches(podSpecs(n, delegated), limit, async (spec) => {
      const pod = await runPod(c, spec);
      await expectPodWired(c, pod);
      return pod;
    });
    expect(new Set(pods.flatMap((p) => p.ips)).size, 'no address handed out twice').toBe(n * 2);
    expect(c.containerd.podNetns().files).toHaveLength(n);
    for (const d of DEVICES.slice(0, delegated))
      expect(await link(c.node, d.name), `${d.name} is in a pod`).toBeUndefined();

    await inBatches(pods, limit, (pod) => tearDown(c, pod));
    await expectNothingLeft(c, pods);
  });
});

/** A node of a cluster's devices: two in group frontend (asked for by annotations), a VF for the secondary network. */
const FE1: GroupDevice = { name: 'ens1f0', mac: '02:fe:00:00:cd:01', group: 'frontend' };
const FE2: GroupDevice = { name: 'ens1f1', mac: '02:fe:00:00:cd:02', group: 'frontend' };
const VF1: GroupDevice = { name: 'ens2f0v1', mac: '02:fe:00:00:ce:01', group: 'sriov', pciAddress: '0000:18:02.1' };
const SECONDARY = 'sriov';

/**
 * A node whose ferryd watches its pods in the stand-in API server; namespace default may have both groups
 * and static addresses in 198.51.100.0/28. The default handler runs Ferry's network alone; MULTINET runs
 * it as eth0 and Ferry's secondary network (`infraNIC: false`, its own pool) as eth1.
 */
async function useClusterCriNode(t: Scope): Promise<CriNode & { api: KubeApi }> {
  const devices = [FE1, FE2, VF1];
  const { node, ferryd, api } = await usePodNode(t, devices, {
    cooldownSec: 3600,
    networks: [
      { name: 'ferry', ipv4: { subnet: '10.244.1.0/24' }, ipv6: { subnet: 'fd00:10:244:1::/64' } },
      {
        name: SECONDARY,
        infraNIC: false,
        ipv4: { subnet: '192.168.50.0/24', rangeStart: '192.168.50.10', gateway: '192.168.50.1' },
      },
    ],
    tenancy: {
      deviceGroups: [
        { group: 'frontend', namespaces: ['default'] },
        { group: 'sriov', namespaces: ['default'] },
      ],
      staticAddresses: [{ namespaces: ['default'], ranges: ['198.51.100.0/28'] }],
    },
  });
  const containerd = await useContainerd(t, {
    node,
    conflist: ferryConflist(ferryd),
    handlers: {
      [MULTINET]: [ferryConflist(ferryd), { ...ferryConflist(ferryd, { infraNIC: false }), name: SECONDARY }],
    },
  });
  await expectCri(containerd);
  return { node, ferryd, api, containerd, devices, baseline: await linkNames(node) };
}

/** The Pod in the API server (namespace default, on this node), as the kubelet's PodSandboxConfig carries it. */
async function kubePod(api: KubeApi, name: string, nics?: unknown): Promise<NonNullable<PodSpec['kube']>> {
  const annotations: Record<string, string> = nics === undefined ? {} : { [POD_NICS_ANNOTATION]: JSON.stringify(nics) };
  const { uid } = await putPod(api, 'default', name, annotations);
  return { uid, annotations };
}

/** Ferry's entries of the pod's network-status once there are `count`, without Ferry's own key. */
async function statusOf(api: KubeApi, pod: RunningPod, count: number): Promise<StatusEntry[]> {
  const ref = { namespace: 'default', name: pod.name };
  const status = await untilNetworkStatus(api, ref, (s) => ferryEntries(s).length === count, `containerd: ${pod.name}`);
  for (const e of status) expect(e['dev.ferry.attachment']?.containerId, 'the sandbox ID').toBe(pod.id);
  return status.map(({ 'dev.ferry.attachment': _, ...e }) => e);
}

async function untilNoStatus(api: KubeApi, pod: RunningPod): Promise<void> {
  await untilNetworkStatus(
    api,
    { namespace: 'default', name: pod.name },
    (s) => s === undefined,
    'containerd: removed',
  );
}

describe('containerd CRI on a node of a cluster: the Pods in the API server', () => {
  test('a pod gets its delegated NIC from its ferry.dev/nics annotation, named and addressed as it asks, the pod next to it (no annotation) eth0 alone; network-status lists them; stop → stop → remove bring the device home and release everything', async (t) => {
    const c = await useClusterCriNode(t);
    const nics = [
      { group: 'frontend', ifName: 'fe0', addresses: ['198.51.100.5/28'], routes: [{ dst: '203.0.113.0/24' }] },
    ];
    const [asks, plain] = await Promise.all([
      kubePod(c.api, 'web-5d8f7c9b4-x2kqp', nics),
      kubePod(c.api, 'web-5d8f7c9b4-m7wzt'),
    ]);
    const pods = await Promise.all([
      runPod(c, { name: 'web-5d8f7c9b4-x2kqp', handler: '', kube: asks }),
      runPod(c, { name: 'web-5d8f7c9b4-m7wzt', handler: '', kube: plain }),
    ]);
    const [web1, web2] = pods as [RunningPod, RunningPod];
    for (const pod of pods) await expectPodWired(c, pod);

    // The annotated pod has a frontend device as fe0, with its static address and route; the other has none.
    expect(await linkNames(web1.netns)).toEqual(['eth0', 'fe0', 'lo']);
    expect(await linkNames(web2.netns)).toEqual(['eth0', 'lo']);
    const fe0 = await link(web1.netns, 'fe0');
    const device = [FE1, FE2].find((d) => d.mac === fe0?.address);
    expect(device, 'fe0 is a frontend device').toBeDefined();
    expect(await addresses(web1.netns, 'fe0')).toEqual(['198.51.100.5/28']);
    expect(await link(c.node, device?.name ?? ''), 'the device left the node').toBeUndefined();
    expect(
      (await linkNames(c.node)).filter((l) => !c.baseline.includes(l)),
      'two host veths',
    ).toHaveLength(2);
    const [endpoint] = EndpointListSchema.parse(
      (await c.ferryd.request('GET', `/v1/operator/endpoints?namespace=default&pod=${web1.name}`)).json,
    ).endpoints;
    expect(endpoint?.interfaces.find((i) => i.ifName === 'fe0')).toMatchObject({
      nicType: 'DelegatedNIC',
      deviceMac: device?.mac,
      addresses: [expect.objectContaining({ address: '198.51.100.5/28' })],
      routes: [expect.objectContaining({ dst: '203.0.113.0/24' })],
    });
    expect((await routes(web1.netns, 4)).find((r) => r.dst === '203.0.113.0/24')?.dev).toBe('fe0');

    // What a Kubernetes user reads back in the Pods.
    const eth0Of = async (pod: RunningPod) => ({
      name: 'ferry',
      interface: 'eth0',
      ips: pod.ips,
      mac: (await link(pod.netns, 'eth0'))?.address,
      default: true,
    });
    expect(await statusOf(c.api, web1, 2)).toEqual([
      await eth0Of(web1),
      { name: 'ferry', interface: 'fe0', ips: ['198.51.100.5'], mac: device?.mac, default: false },
    ]);
    expect(await statusOf(c.api, web2, 1)).toEqual([await eth0Of(web2)]);

    await Promise.all(pods.map((pod) => tearDown(c, pod)));
    for (const pod of pods) await untilNoStatus(c.api, pod);
    await expectNothingLeft(c, pods);
  });

  test("a pod with a secondary network next to its eth0 (handler multinet: Ferry's primary, then its infraNIC: false network): eth1 is the device the annotation names, with the network's address; the CRI reports eth0's; network-status lists both; stop → stop → remove bring it home and release everything", async (t) => {
    const c = await useClusterCriNode(t);
    const name = 'router-6f7d8c9b5-k2x4q';
    const kube = await kubePod(c.api, name, [{ network: SECONDARY, pciAddress: VF1.pciAddress }]);
    const pod = await runPod(c, { name, handler: MULTINET, kube });
    await expectPodWired(c, pod);

    // eth0 is the InfraNIC (runPod checked the CRI reports its addresses); eth1 is the VF itself, no veth.
    expect(await linkNames(pod.netns)).toEqual(['eth0', 'eth1', 'lo']);
    expect((await link(pod.netns, 'eth1'))?.address).toBe(VF1.mac);
    expect(await addresses(pod.netns, 'eth1')).toEqual(['192.168.50.10/24']);
    expect(await link(c.node, VF1.name), 'the VF left the node').toBeUndefined();
    for (const d of [FE1, FE2]) expect((await link(c.node, d.name))?.address, `${d.name} stays`).toBe(d.mac);
    expect(
      (await linkNames(c.node)).filter((l) => !c.baseline.includes(l)),
      "eth0's host veth alone",
    ).toHaveLength(1);
    const [endpoint] = EndpointListSchema.parse(
      (await c.ferryd.request('GET', `/v1/operator/endpoints?namespace=default&pod=${name}`)).json,
    ).endpoints;
    // go-cni attaches a handler's networks in parallel: ferryd lists them as they were allocated.
    const held = endpoint?.interfaces.map((i) => [i.network, i.ifName, i.nicType, i.deviceMac]);
    expect(held?.sort(([, a], [, b]) => String(a).localeCompare(String(b)))).toEqual([
      ['ferry', 'eth0', 'InfraNIC', undefined],
      [SECONDARY, 'eth1', 'DelegatedNIC', VF1.mac],
    ]);

    expect(await statusOf(c.api, pod, 2)).toEqual([
      { name: 'ferry', interface: 'eth0', ips: pod.ips, mac: (await link(pod.netns, 'eth0'))?.address, default: true },
      {
        name: SECONDARY,
        interface: 'eth1',
        ips: ['192.168.50.10'],
        mac: VF1.mac,
        default: false,
        'device-info': { type: 'pci', version: '1.1.0', pci: { 'pci-address': VF1.pciAddress } },
      },
    ]);

    await tearDown(c, pod);
    await untilNoStatus(c.api, pod);
    await expectNothingLeft(c, [pod], ['192.168.50.10']);
  });
});

/*
 * Daemon-down pods: 8, torn down together, as a drained node's kubelet does. A DEL that finds ferryd's
 * socket refused queues at once (its time is bench/cri-teardown.bench.ts's business, not this test's).
 */
test('ferryd killed while 8 pods (2 with a delegated NIC) are torn down: every call succeeds; after restart nothing is held', async (t) => {
  const c = await useCriNode(t);
  const pods = await Promise.all(podSpecs(8, 2).map((spec) => runPod(c, spec)));
  await c.ferryd.kill('SIGKILL');

  await Promise.all(pods.map((pod) => tearDown(c, pod)));

  // Without ferryd the shim cleaned up statelessly and queued one DEL per attachment (duplicates collapse).
  expect(await linkNames(c.node), 'links in the node with ferryd down').toEqual(c.baseline);
  expect(c.containerd.podNetns(), 'pod netns with ferryd down').toEqual({ files: [], mounts: [] });
  expect(readdirSync(c.ferryd.deleteQueue).filter((f) => f.endsWith('.json'))).toHaveLength(pods.length);

  await c.ferryd.start();
  await expectNothingLeft(c, pods);
});

/*
 * A run killed mid-test leaves containerd's shims and pause processes running (they outlive containerd by
 * design), with mounts, cgroups and shim sockets: what global-setup's sweep removes, one containerd dir at
 * a time, and what this test checks it does.
 */
test('containerd SIGKILLed with pods running: the leftover sweep ends its shims and pods, unmounts, removes cgroups and sockets', async (t) => {
  const { node, ferryd } = await useNode(t);
  // The fixture's own clean-up is not what is tested: it runs after the checks.
  const scope = manualScope();
  t.onTestFinished(() => scope.runCleanups());
  const c = await useContainerd(scope, { node, conflist: ferryConflist(ferryd) });
  const ids = await Promise.all(['a', 'b'].map((name) => c.cri.runPodSandbox(c.podConfig(name))));
  const sockets = ids.map((id) => shimSocket(c, id));
  expect(processesNaming(c.dir).length, 'containerd and a shim per pod').toBeGreaterThanOrEqual(1 + ids.length);
  expect(mountsUnder(c.dir).length, 'rootfs, shm and netns per pod').toBeGreaterThanOrEqual(3 * ids.length);
  expect(podCgroups(c).length, 'the pods run in cgroups under the parent').toBeGreaterThan(ids.length);
  expect(
    sockets.filter((s) => existsSync(s)),
    'the shims listen where containerd 1.6 puts them',
  ).toEqual(sockets);

  if (!c.pid) throw new Error('containerd has no PID');
  process.kill(c.pid, 'SIGKILL');
  await removeContainerdLeftovers(c.dir);

  expect(processesNaming(c.dir), 'processes').toEqual([]);
  expect(mountsUnder(c.dir), 'mounts').toEqual([]);
  expect(podCgroups(c), 'cgroups').toEqual([]);
  expect(
    sockets.filter((s) => existsSync(s)),
    'shim sockets',
  ).toEqual([]);
});
