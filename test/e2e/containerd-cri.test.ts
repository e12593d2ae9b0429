/**
 * Ferry under the kubelet's real path: containerd 1.6's CRI plugin (libcni via go-cni) runs Ferry, and the
 * test makes the CRI calls the kubelet makes for a pod's life: RunPodSandbox → PodSandboxStatus (the pod's
 * IPs as the kubelet learns them) → StopPodSandbox, twice (the kubelet stops eagerly and again before it
 * removes) → RemovePodSandbox. InfraNIC pods run on the default runtime handler; a pod with a delegated NIC
 * runs on the handler "frontend", whose network asks for one (as a RuntimeClass would pick it). Afterwards
 * nothing may be left: links in the node, pod netns, sandboxes, endpoints or Assigned addresses in ferryd
 * (released addresses cooling down are fine: they are checked to be the pods' own), queued DELs, devices
 * away from home.
 */
import { existsSync, readdirSync } from 'node:fs';
import { AddressListSchema, EndpointListSchema } from '@ferry/shared-types/api/operator';
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
import { addresses, link, linkNames } from '../fixtures/kernel';
import type { TestNetns } from '../fixtures/netns';
import { useNode } from '../fixtures/node';
import { manualScope, type Scope } from '../fixtures/scope';

const DEVICES: TestDevice[] = [
  { name: 'eth3', mac: '02:fe:00:00:cc:01' },
  { name: 'eth4', mac: '02:fe:00:00:cc:02' },
];
const FRONTEND = 'frontend';

interface CriNode {
  node: TestNetns;
  ferryd: Ferryd;
  containerd: Containerd;
  /** The node's links before any pod: the devices are on it, and nothing else but lo. */
  baseline: string[];
}

async function useCriNode(t: Scope): Promise<CriNode> {
  // Released addresses stay PendingRelease for the whole test, so the end can check they are the pods' own.
  const { node, ferryd } = await useNodeWithDevices(t, DEVICES, { cooldownSec: 3600 });
  const containerd = await useContainerd(t, {
    node,
    conflist: ferryConflist(ferryd),
    handlers: { [FRONTEND]: ferryConflist(ferryd, { delegatedNICs: { group: 'frontend', count: 1 } }) },
  });
  const version = await containerd.cri.version();
  expect([version.runtimeName, version.runtimeApiVersion], 'the CRI is runtime.v1').toEqual(['containerd', 'v1']);
  return { node, ferryd, containerd, baseline: await linkNames(node) };
}

interface PodSpec {
  name: string;
  delegated: boolean;
}

interface RunningPod extends PodSpec {
  id: string;
  /** The pod's netns as containerd reports it. */
  netns: TestNetns;
  ips: string[];
}

const podSpecs = (n: number, delegated: number): PodSpec[] =>
  Array.from({ length: n }, (_, i) => ({ name: `pod-${i}`, delegated: i < delegated }));

/** RunPodSandbox, then PodSandboxStatus; checks the sandbox is ready, on its handler, with an IP of each family. */
async function runPod(c: CriNode, spec: PodSpec): Promise<RunningPod> {
  const { cri } = c.containerd;
  const id = await cri.runPodSandbox(c.containerd.podConfig(spec.name), spec.delegated ? FRONTEND : '');
  const { status } = await cri.podSandboxStatus(id);
  expect(status.state, spec.name).toBe('SANDBOX_READY');
  expect(status.runtimeHandler).toBe(spec.delegated ? FRONTEND : '');
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
  if (pod.delegated) {
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

async function expectNothingLeft(c: CriNode, pods: RunningPod[]): Promise<void> {
  expect(await c.containerd.cri.listPodSandbox(), 'sandboxes').toEqual([]);
  expect(c.containerd.podNetns(), 'pod netns').toEqual({ files: [], mounts: [] });
  expect(await linkNames(c.node), 'links in the node').toEqual(c.baseline);
  for (const d of DEVICES) expect((await link(c.node, d.name))?.address, `${d.name} is home`).toBe(d.mac);

  const endpoints = EndpointListSchema.parse((await c.ferryd.request('GET', '/v1/operator/endpoints')).json);
  expect(endpoints.endpoints, 'endpoints in ferryd').toEqual([]);
  expect(await c.ferryd.assignedAddresses(), 'Assigned addresses').toEqual([]);
  // Released addresses cool down (PendingRelease) before reuse: each must be one the pods had.
  const cooling = AddressListSchema.parse(
    (await c.ferryd.request('GET', '/v1/operator/addresses?state=PendingRelease')).json,
  ).addresses.map((a) => a.address);
  expect(cooling.sort()).toEqual(pods.flatMap((p) => p.ips).sort());
  expect(await queueState(c.ferryd), 'delete queue').toEqual({ pending: 0, failed: 0 });
  const devices = (await c.ferryd.request('GET', '/v1/operator/devices')).json as { devices: { state: string }[] };
  expect(devices.devices.map((d) => d.state)).toEqual(DEVICES.map(() => 'free'));
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
