/**
 * ferryd as the kubelet's device plugin (deviceplugin/v1beta1), driven by a stand-in kubelet that speaks
 * the real protos (fixtures/kubelet.ts), with devices stood in by veth ends in real namespaces: the
 * registration, ListAndWatch following the node, GetPreferredAllocation and Allocate as the kubelet calls
 * them when it admits a pod, a kubelet restart; then ADDs through the real shim that give each pod the
 * device the kubelet allocated to it (pod-resources), and a DEL with ferryd down that brings it home.
 */
import { expect, test } from 'vitest';
import { netConf, newContainerId } from '../fixtures/conf';
import { type TestDevice, useNodeWithDevices } from '../fixtures/device';
import { ferryctl } from '../fixtures/ferryctl';
import type { Ferryd } from '../fixtures/ferryd';
import { addresses, link, linkNames } from '../fixtures/kernel';
import { type StandInKubelet, useStandInKubelet } from '../fixtures/kubelet-plugins';
import { inNetns, type TestNetns, useNetns } from '../fixtures/netns';
import { podCniArgs } from '../fixtures/network-status';
import { putPod, usePodNode } from '../fixtures/pod-node';
import type { Scope } from '../fixtures/scope';
import { runShim } from '../fixtures/shim';
import { logged, waitFor } from '../fixtures/wait';

const RESOURCE = 'ferry.dev/frontend';
const DEVICES: TestDevice[] = [
  { name: 'eth1', mac: '02:fe:00:00:00:01' },
  { name: 'eth2', mac: '02:fe:00:00:00:02' },
];
const [D1, D2] = DEVICES.map((d) => d.mac) as [string, string];
const healthy =
  (...macs: string[]) =>
  (devices: { ID: string; health: string }[]) =>
    devices.length === DEVICES.length && devices.every((d) => (d.health === 'Healthy') === macs.includes(d.ID));

async function useServedNode(t: Scope, kubelet: StandInKubelet) {
  return useNodeWithDevices(t, DEVICES, {
    devicePlugin: { kubeletDir: kubelet.dir },
  });
}

/** One sample of ferryd's /metrics, by name and labels as written there. */
async function metric(ferryd: Ferryd, series: string): Promise<number | undefined> {
  const text = (await ferryd.request('GET', '/metrics')).body;
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

test('registration, ListAndWatch following the node, GetPreferredAllocation (devices free on the node before those ferryd still holds) and Allocate, a kubelet restart', async (t) => {
  const kubelet = await useStandInKubelet(t);
  const { node, ferryd, wire } = await useServedNode(t, kubelet);

  // Registration as the kubelet's documentation has it: version, our socket in its directory, the resource.
  await waitFor('the registration', async () => kubelet.registrations.length === 1);
  expect(kubelet.registrations[0]).toEqual({
    version: 'v1beta1',
    endpoint: 'ferry-frontend.sock',
    resourceName: RESOURCE,
    options: { preStartRequired: false, getPreferredAllocationAvailable: true },
  });
  expect(await kubelet.waitForDevices(RESOURCE, 'both healthy', healthy(D1, D2))).toEqual([
    { ID: D1, health: 'Healthy' },
    { ID: D2, health: 'Healthy' },
  ]);
  await waitFor('GetDevicePluginOptions', async () => kubelet.plugin(RESOURCE)?.pluginOptions !== undefined);
  expect(kubelet.plugin(RESOURCE)?.pluginOptions).toEqual(kubelet.registrations[0]?.options);
  expect(await metric(ferryd, `ferry_device_plugin_registered{resource="${RESOURCE}"}`)).toBe(1);

  // A device taken off the node by something outside Ferry (moved into another namespace) is Unhealthy
  // at once on the open stream; back on the node, Healthy again.
  await inNetns(node, 'ip', 'link', 'set', 'eth2', 'netns', wire.path);
  await kubelet.waitForDevices(RESOURCE, `${D2} unhealthy`, healthy(D1));
  expect(await metric(ferryd, `ferry_device_plugin_devices{resource="${RESOURCE}",health="Unhealthy"}`)).toBe(1);
  // The kubelet does not offer an unhealthy device: a pod asking for two cannot be admitted now.
  await expect(
    kubelet.admit({ namespace: 'team-a', name: 'two', containers: [{ name: 'app', limits: { [RESOURCE]: 2 } }] }),
  ).rejects.toThrow(/requested 2 of ferry\.dev\/frontend, available 1/);
  await inNetns(wire, 'ip', 'link', 'set', 'eth2', 'netns', node.path);
  await kubelet.waitForDevices(RESOURCE, `${D2} healthy again`, healthy(D1, D2));
  expect(kubelet.plugin(RESOURCE)?.lists.length).toBeGreaterThanOrEqual(3);

  // Admission: the kubelet's candidates are the healthy devices no pod it knows holds; GetPreferredAllocation
  // picks among them, then Allocate.
  const a = await kubelet.admit({
    namespace: 'team-a',
    name: 'web-1',
    containers: [{ name: 'app', limits: { [RESOURCE]: 1 } }],
  });
  expect(a.preferred.app?.[RESOURCE]).toEqual([D1]);
  expect(a.devices.app?.[RESOURCE]).toEqual([D1]);
  expect(a.envs.app).toEqual({ FERRY_DEVICES_FRONTEND: D1 });
  // web-1's sandbox is added: ferryd holds D1 for it. Then the pod is deleted: the kubelet frees its
  // devices at once, while the runtime's DEL of the sandbox comes later.
  const pod1 = await useNetns(t, 'pod');
  const add1 = await runShim(node, 'ADD', podCall(ferryd, pod1, 'web-1'));
  expect(add1.exitCode, add1.stdout).toBe(0);
  expect((await link(pod1, 'net1'))?.address).toBe(D1);
  kubelet.forget('team-a', 'web-1');
  // The kubelet alone would take D1, its first candidate; ferryd prefers D2, free on the node, so the next
  // pod's ADD does not wait (code 106) for web-1's DEL.
  const b = await kubelet.admit({
    namespace: 'team-a',
    name: 'web-2',
    containers: [{ name: 'app', limits: { [RESOURCE]: 1 } }],
  });
  expect(b.candidates.app?.[RESOURCE]).toEqual([D1, D2]);
  expect(b.preferred.app?.[RESOURCE]).toEqual([D2]);
  expect(b.devices.app?.[RESOURCE]).toEqual([D2]);
  const pod2 = await useNetns(t, 'pod');
  const add2 = await runShim(node, 'ADD', podCall(ferryd, pod2, 'web-2'));
  expect(add2.exitCode, add2.stdout).toBe(0);
  expect((await link(pod2, 'net1'))?.address).toBe(D2);

  // A kubelet restart: its sockets go, ours too; ferryd serves again on a new socket and registers again.
  await kubelet.restart();
  await waitFor('the registration with the new kubelet', async () => kubelet.registrations.length === 2, 10_000);
  expect(kubelet.registrations[1]).toEqual(kubelet.registrations[0]);
  await kubelet.waitForDevices(RESOURCE, 'the list on the new stream', healthy(D1, D2));
  expect(
    await metric(ferryd, `ferry_device_plugin_registrations_total{resource="${RESOURCE}",result="registered"}`),
  ).toBe(2);
  // The new kubelet's plugin answers Allocate: the checkpoint kept web-2's D2, so web-3's only candidate
  // is D1 (still held in ferryd by web-1 until its DEL, which a kubelet cannot know).
  const c = await kubelet.admit({
    namespace: 'team-a',
    name: 'web-3',
    containers: [{ name: 'app', limits: { [RESOURCE]: 1 } }],
  });
  expect(c.candidates.app?.[RESOURCE]).toEqual([D1]);
  expect(c.devices.app?.[RESOURCE]).toEqual([D1]);
  await logged(ferryd, 'registering again');
});

/** The pod's eth0 ADD as the kubelet's runtime runs it (K8S_POD_* in CNI_ARGS). */
function podCall(ferryd: Ferryd, pod: TestNetns, name: string, extra: Record<string, unknown> = {}) {
  return {
    containerId: newContainerId(),
    ifName: 'eth0',
    netns: pod,
    conf: netConf(ferryd, extra),
    cniArgs: podCniArgs('team-a', name, `uid-${name}`),
  };
}

test('an ADD gives each pod the device the kubelet allocated to it, a pod without an allocation none; a DEL with ferryd down brings it home', async (t) => {
  const kubelet = await useStandInKubelet(t);
  const { node, ferryd } = await useServedNode(t, kubelet);
  await kubelet.waitForDevices(RESOURCE, 'both healthy', healthy(D1, D2));
  const limits = { [RESOURCE]: 1 };
  await kubelet.admit({ namespace: 'team-a', name: 'web-1', containers: [{ name: 'app', limits }] });
  await kubelet.admit({ namespace: 'team-a', name: 'web-2', containers: [{ name: 'app', limits }] });

  // web-2 is added first: it gets the kubelet's choice for it (eth2), not the group's first free device.
  const pod2 = await useNetns(t, 'pod');
  const call2 = podCall(ferryd, pod2, 'web-2');
  const add2 = await runShim(node, 'ADD', call2);
  expect(add2.exitCode, add2.stdout).toBe(0);
  expect(await linkNames(pod2)).toEqual(['eth0', 'lo', 'net1']);
  expect((await link(pod2, 'net1'))?.address).toBe(D2);
  expect(await linkNames(node)).toContain('eth1');

  // A pod the kubelet allocated nothing (no resources.limits) gets no device of the group, though the
  // conflist asks for one and one is free.
  const pod3 = await useNetns(t, 'pod');
  const add3 = await runShim(
    node,
    'ADD',
    podCall(ferryd, pod3, 'web-3', { delegatedNICs: { group: 'frontend', count: 1 } }),
  );
  expect(add3.exitCode, add3.stdout).toBe(0);
  expect(await linkNames(pod3)).toEqual(['eth0', 'lo']);
  expect(await linkNames(node)).toContain('eth1');

  const pod1 = await useNetns(t, 'pod');
  const add1 = await runShim(node, 'ADD', podCall(ferryd, pod1, 'web-1'));
  expect(add1.exitCode, add1.stdout).toBe(0);
  expect((await link(pod1, 'net1'))?.address).toBe(D1);

  // ferryd down: the DEL queues and the shim brings the device home itself; ferryd drains it at start.
  await ferryd.kill('SIGKILL');
  const del = await runShim(node, 'DEL', call2);
  expect(del.exitCode, del.stdout).toBe(0);
  expect((await link(node, 'eth2'))?.address).toBe(D2);
  expect(await linkNames(pod2)).toEqual(['lo']);
  kubelet.forget('team-a', 'web-2');
  await ferryd.start();
  const devices = (await ferryd.request('GET', '/v1/operator/devices')).json as {
    devices: { mac: string; state: string }[];
  };
  expect(devices.devices.map((d) => [d.mac, d.state])).toEqual([
    [D1, 'assigned'],
    [D2, 'free'],
  ]);
  // The new ferryd registers again; the kubelet gives the device to the next pod, which gets it.
  await waitFor('the registration of the new ferryd', async () => kubelet.registrations.length === 2);
  await kubelet.waitForDevices(RESOURCE, 'the new ferryd lists both', healthy(D1, D2));
  await kubelet.admit({ namespace: 'team-a', name: 'web-4', containers: [{ name: 'app', limits }] });
  const pod4 = await useNetns(t, 'pod');
  const add4 = await runShim(node, 'ADD', podCall(ferryd, pod4, 'web-4'));
  expect(add4.exitCode, add4.stdout).toBe(0);
  expect((await link(pod4, 'net1'))?.address).toBe(D2);
});

test('no kubelet yet: ferryd serves anyway, ferryctl doctor says so, and it registers when the kubelet comes; its pod-resources away, an ADD is code 11', async (t) => {
  const kubelet = await useStandInKubelet(t, { running: false });
  const { node, ferryd } = await useServedNode(t, kubelet);
  const doctor = async () => JSON.parse((await ferryctl(ferryd, 'doctor', '--json')).stdout).violations;
  expect(await doctor()).toEqual([
    {
      kind: 'device-plugin-unregistered',
      subject: RESOURCE,
      msg: 'not registered with the kubelet: no kubelet socket yet; pods cannot ask for it',
    },
  ]);
  expect(await metric(ferryd, `ferry_device_plugin_registered{resource="${RESOURCE}"}`)).toBe(0);
  await kubelet.restart();
  await kubelet.waitForDevices(RESOURCE, 'both healthy', healthy(D1, D2));
  expect(await doctor()).toEqual([]);

  await kubelet.stop();
  const pod = await useNetns(t, 'pod');
  const add = await runShim(node, 'ADD', podCall(ferryd, pod, 'web-1'));
  expect(add.exitCode).toBe(1);
  expect(add.json).toMatchObject({
    code: 11,
    msg: expect.stringContaining('ask the kubelet which devices pod team-a/web-1 was allocated'),
  });
  expect(await linkNames(pod)).toEqual(['lo']);
  expect(await ferryd.assignedAddresses()).toEqual([]);
});

test("with the pod watch: the pod's ferry.dev/nics names and addresses the device the kubelet allocated", async (t) => {
  const kubelet = await useStandInKubelet(t);
  const devices = DEVICES.map((d) => ({ ...d, group: 'frontend' }));
  const n = await usePodNode(t, devices, {
    devicePlugin: { kubeletDir: kubelet.dir },
    tenancy: { deviceGroups: [], staticAddresses: [{ namespaces: ['team-a'], ranges: ['198.51.100.0/28'] }] },
  });
  await kubelet.waitForDevices(RESOURCE, 'both healthy', healthy(D1, D2));
  const ref = await putPod(n.api, 'team-a', 'web-1', {
    'ferry.dev/nics': JSON.stringify([{ group: 'frontend', ifName: 'fe0', addresses: ['198.51.100.5/28'] }]),
  });
  // Someone else's pod holds eth1: the kubelet allocates eth2 to this one.
  await kubelet.admit({ namespace: 'team-a', name: 'other', containers: [{ name: 'app', limits: { [RESOURCE]: 1 } }] });
  await kubelet.admit({ namespace: 'team-a', name: 'web-1', containers: [{ name: 'app', limits: { [RESOURCE]: 1 } }] });
  const pod = await useNetns(t, 'pod');
  const add = await runShim(n.node, 'ADD', {
    containerId: newContainerId(),
    ifName: 'eth0',
    netns: pod,
    conf: netConf(n.ferryd),
    cniArgs: podCniArgs(ref.namespace, ref.name, ref.uid),
  });
  expect(add.exitCode, add.stdout).toBe(0);
  expect(await linkNames(pod)).toEqual(['eth0', 'fe0', 'lo']);
  const fe0 = await link(pod, 'fe0');
  expect(fe0?.address).toBe(D2);
  expect(await addresses(pod, 'fe0')).toContain('198.51.100.5/28');
});
