/**
 * DelegatedNICs: host devices moved into pods and always brought home, through the real shim and a real
 * ferryd, with devices stood in by veth ends (there is no SR-IOV here).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { netConf, newContainerId } from '../fixtures/conf';
import { type TestDevice, useNodeWithDevices } from '../fixtures/device';
import { FAST_PASSES, type Ferryd, useFerryd } from '../fixtures/ferryd';
import { link, linkNames, useLinkMonitor } from '../fixtures/kernel';
import { inNetns, removeNetns, type TestNetns, useNetns } from '../fixtures/netns';
import { useNodeNetns } from '../fixtures/node';
import type { Scope } from '../fixtures/scope';
import { runShim } from '../fixtures/shim';
import { logged } from '../fixtures/wait';

const DEVICES: TestDevice[] = [
  { name: 'eth1', mac: '02:fe:00:00:00:01' },
  { name: 'eth2', mac: '02:fe:00:00:00:02' },
];

interface Device {
  mac: string;
  state: string;
  hostIfName?: string;
  assignedTo?: { containerId: string; ifName: string };
}

const useDeviceNode = (t: Scope) => useNodeWithDevices(t, DEVICES);
const AN_HOUR = { reconcile: { intervalSec: 3600, staleGraceSec: 3600 } };

/** What an app in the pod may do to a device it was given. */
async function renameInPod(pod: TestNetns, from: string, to: string, alias?: string): Promise<void> {
  await inNetns(pod, 'ip', 'link', 'set', from, 'down');
  await inNetns(pod, 'ip', 'link', 'set', from, 'name', to);
  if (alias !== undefined) await inNetns(pod, 'ip', 'link', 'set', to, 'alias', alias);
}

async function devices(ferryd: Ferryd): Promise<Device[]> {
  return ((await ferryd.request('GET', '/v1/operator/devices')).json as { devices: Device[] }).devices;
}

async function expectHome(node: TestNetns, ferryd: Ferryd): Promise<void> {
  for (const d of DEVICES) {
    const l = await link(node, d.name);
    expect(l?.address, `${d.name} is home`).toBe(d.mac);
    expect(l?.ifalias ?? '', `${d.name} carries no marker`).toBe('');
    expect(l?.group, `${d.name} is back in the default link group`).toBe('default');
  }
  // ferryd rescans right after a release that freed devices; give that pass a moment.
  const deadline = Date.now() + 3000;
  let states: string[] = [];
  do {
    states = (await devices(ferryd)).map((d) => d.state);
    if (states.every((s) => s === 'free')) break;
    await new Promise((r) => setTimeout(r, 50));
  } while (Date.now() < deadline);
  expect(states).toEqual(['free', 'free']);
}

const twoNics = (ferryd: Ferryd, extra: Record<string, unknown> = {}) =>
  netConf(ferryd, { delegatedNICs: { group: 'frontend', count: 2 }, ...extra });

describe.for(['1.1.0', '0.4.0'])('DelegatedNIC, cniVersion %s', (cniVersion) => {
  test('eth0 + net1 + net2: ADD → CHECK → DEL → DEL; the devices come home with their names and MACs', async (t) => {
    const { node, ferryd } = await useDeviceNode(t);
    const pod = await useNetns(t, 'pod');
    const containerId = newContainerId();
    const call = { containerId, ifName: 'eth0', netns: pod, conf: twoNics(ferryd, { cniVersion }) };
    const add = await runShim(node, 'ADD', call);
    expect(add.exitCode, add.stdout).toBe(0);
    const result = add.json as { interfaces: { name: string; mac?: string; sandbox?: string }[] };
    expect(result.interfaces.map((i) => i.name).slice(1)).toEqual(['eth0', 'net1', 'net2']);
    expect(result.interfaces.slice(2).map((i) => i.mac)).toEqual(DEVICES.map((d) => d.mac));
    expect(await linkNames(pod)).toEqual(['eth0', 'lo', 'net1', 'net2']);
    expect((await link(pod, 'net1'))?.ifalias).toBe('ferry:host-ifname=eth1 attachment=eth0');
    expect((await link(pod, 'net1'))?.group).toBe(String(0x46525259));
    expect(await linkNames(node)).not.toContain('eth1');

    const ep = (await ferryd.request('GET', `/v1/endpoints/${containerId}`)).json as {
      interfaces: {
        ifName: string;
        endpointId: string;
        nicType: string;
        containerIfIndex: number;
        hostIfName?: string;
      }[];
    };
    expect(ep.interfaces.map((i) => [i.ifName, i.nicType, i.endpointId])).toEqual([
      ['eth0', 'InfraNIC', containerId],
      ['net1', 'DelegatedNIC', `${containerId}-net1`],
      ['net2', 'DelegatedNIC', `${containerId}-net2`],
    ]);
    expect(ep.interfaces[1]?.containerIfIndex).toBe((await link(pod, 'net1'))?.ifindex);
    expect((await devices(ferryd)).map((d) => [d.state, d.assignedTo?.ifName])).toEqual([
      ['assigned', 'net1'],
      ['assigned', 'net2'],
    ]);

    const check = await runShim(node, 'CHECK', {
      ...call,
      conf: twoNics(ferryd, { cniVersion, prevResult: add.json }),
    });
    expect(check.exitCode, check.stdout).toBe(0);
    for (const n of [1, 2]) {
      const del = await runShim(node, 'DEL', call);
      expect(del.exitCode, `DEL #${n}: ${del.stdout}`).toBe(0);
    }
    expect(await linkNames(pod)).toEqual(['lo']);
    await expectHome(node, ferryd);
    expect(await ferryd.assignedAddresses()).toEqual([]);
  });
});

describe('DelegatedNIC DEL finds its device', () => {
  // The reconciler is an hour away, and ferryd's own rescan after a release (which renames free devices
  // by MAC) is ruled out by watching the node: the device must arrive there under its own name.
  test('a device renamed inside the pod, with its alias changed, is brought home under its own name by the DEL', async (t) => {
    const { node, ferryd } = await useNodeWithDevices(t, DEVICES, AN_HOUR);
    const pod = await useNetns(t, 'pod');
    const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf: twoNics(ferryd) };
    expect((await runShim(node, 'ADD', call)).exitCode).toBe(0);
    await renameInPod(pod, 'net1', 'wan0', 'renamed by the app');
    const monitor = await useLinkMonitor(t, node);
    const del = await runShim(node, 'DEL', call);
    expect(del.exitCode, del.stdout).toBe(0);
    for (const d of DEVICES) expect([...new Set(monitor.namesOf(d.mac))], `${d.mac} on the node`).toEqual([d.name]);
    expect((await ferryd.request('GET', `/v1/endpoints/${call.containerId}`)).status).toBe(404);
    expect(await ferryd.assignedAddresses()).toEqual([]);
    await expectHome(node, ferryd);
  });

  test('with ferryd down, a device renamed inside the pod goes home under the name its marker carries', async (t) => {
    const { node, ferryd } = await useNodeWithDevices(t, DEVICES, AN_HOUR);
    const pod = await useNetns(t, 'pod');
    const call = {
      containerId: newContainerId(),
      ifName: 'eth0',
      netns: pod,
      conf: twoNics(ferryd, { deleteQueue: ferryd.deleteQueue, daemonTimeouts: { delWaitMs: 200 } }),
    };
    expect((await runShim(node, 'ADD', call)).exitCode).toBe(0);
    await renameInPod(pod, 'net1', 'wan0');
    await ferryd.kill('SIGKILL');
    const del = await runShim(node, 'DEL', call);
    expect(del.exitCode, del.stdout).toBe(0);
    // No ferryd to rename anything: the names are the DEL's work.
    expect(await linkNames(pod)).toEqual(['lo']);
    for (const d of DEVICES) expect((await link(node, d.name))?.address, `${d.name} is home`).toBe(d.mac);
    // The queued DEL is applied before ferryd's first ready answer.
    await ferryd.start();
    expect((await ferryd.request('GET', `/v1/endpoints/${call.containerId}`)).status).toBe(404);
    expect(await ferryd.assignedAddresses()).toEqual([]);
    await expectHome(node, ferryd);
  });

  test('host name taken: DEL fails cleanly naming the clash, nothing is lost; after the clash goes, DEL succeeds', async (t) => {
    const { node, ferryd } = await useDeviceNode(t);
    const pod = await useNetns(t, 'pod');
    const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf: twoNics(ferryd) };
    expect((await runShim(node, 'ADD', call)).exitCode).toBe(0);
    await inNetns(node, 'ip', 'link', 'add', 'eth1', 'type', 'veth', 'peer', 'name', 'squatter');

    const del = await runShim(node, 'DEL', call);
    expect(del.exitCode).toBe(1);
    expect(del.json).toMatchObject({
      code: 107,
      msg: expect.stringContaining('return device 02:fe:00:00:00:01 to the node as "eth1": that name is taken'),
    });
    expect(await linkNames(pod)).toEqual(expect.arrayContaining(['net1']));
    expect((await link(pod, 'net1'))?.ifalias).toBe('ferry:host-ifname=eth1 attachment=eth0');
    expect((await ferryd.request('GET', `/v1/endpoints/${call.containerId}`)).status).toBe(200);

    await inNetns(node, 'ip', 'link', 'del', 'eth1');
    const retry = await runShim(node, 'DEL', call);
    expect(retry.exitCode, retry.stdout).toBe(0);
    await expectHome(node, ferryd);
    expect((await ferryd.request('GET', `/v1/endpoints/${call.containerId}`)).status).toBe(404);
  });

  test('pod netns gone without DEL: the device the kernel hands back is renamed home and freed by the reconciler', async (t) => {
    const { node, ferryd } = await useNodeWithDevices(t, DEVICES, FAST_PASSES);
    const pod = await useNetns(t, 'pod');
    const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf: twoNics(ferryd) };
    expect((await runShim(node, 'ADD', call)).exitCode).toBe(0);
    // What the kernel does for a physical device when its netns dies: it comes back under its pod-side name.
    for (const n of ['net1', 'net2']) await inNetns(pod, 'ip', 'link', 'set', n, 'netns', node.path);
    await removeNetns(pod.name);
    const deadline = Date.now() + 5000;
    const backUnderPodNames = async () => (await linkNames(node)).some((n) => n === 'net1' || n === 'net2');
    while (Date.now() < deadline && (await backUnderPodNames())) await new Promise((r) => setTimeout(r, 100));
    await expectHome(node, ferryd);
    await logged(ferryd, 'back on the node without a DEL');
    // The runtime's late DEL (netns gone) still succeeds and releases the rest.
    const del = await runShim(node, 'DEL', { ...call, netns: '' });
    expect(del.exitCode, del.stdout).toBe(0);
    expect(await ferryd.assignedAddresses()).toEqual([]);
  });
});

describe('DelegatedNIC names', () => {
  test('a pod that already has an interface named like the device still gets it, and it still goes home', async (t) => {
    const { node, ferryd } = await useDeviceNode(t);
    const pod = await useNetns(t, 'pod');
    await inNetns(pod, 'ip', 'link', 'add', 'eth1', 'type', 'veth', 'peer', 'name', 'x1');
    const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf: twoNics(ferryd) };
    const add = await runShim(node, 'ADD', call);
    expect(add.exitCode, add.stdout).toBe(0);
    expect((await link(pod, 'net1'))?.address).toBe(DEVICES[0]?.mac);
    expect((await link(pod, 'eth1'))?.address).not.toBe(DEVICES[0]?.mac);
    const del = await runShim(node, 'DEL', call);
    expect(del.exitCode, del.stdout).toBe(0);
    await expectHome(node, ferryd);
    expect(await linkNames(pod)).toEqual(['eth1', 'lo', 'x1']);
  });

  test('a device that left the pod before DEL: DEL warns and succeeds', async (t) => {
    const { node, ferryd } = await useDeviceNode(t);
    const pod = await useNetns(t, 'pod');
    const call = {
      containerId: newContainerId(),
      ifName: 'eth0',
      netns: pod,
      conf: twoNics(ferryd, { logLevel: 'debug' }),
    };
    expect((await runShim(node, 'ADD', call)).exitCode).toBe(0);
    const wire = await useNetns(t, 'elsewhere');
    await inNetns(pod, 'ip', 'link', 'set', 'net2', 'netns', wire.path);
    const del = await runShim(node, 'DEL', call);
    expect(del.exitCode, del.stdout).toBe(0);
    expect(readFileSync(`${ferryd.dir}/cni.log`, 'utf8')).toContain('delegated device is not in the pod netns');
    expect((await ferryd.request('GET', `/v1/endpoints/${call.containerId}`)).status).toBe(404);
  });
});

describe('which pod gets which device', () => {
  test('an operator reservation gives a pod its device, named and addressed as reserved', async (t) => {
    const { node, ferryd } = await useDeviceNode(t);
    const pod = await useNetns(t, 'pod');
    const r = await ferryd.request('PUT', `/v1/operator/devices/${DEVICES[1]?.mac}/reservation`, {
      namespace: 'shop',
      pod: 'db-0',
      ifName: 'fast0',
      addresses: [{ family: 4, address: '198.51.100.10/24' }],
      routes: [{ dst: '203.0.113.0/24', gw: '198.51.100.1' }],
    });
    expect(r.status, r.body).toBe(200);
    const add = await runShim(node, 'ADD', {
      containerId: newContainerId(),
      ifName: 'eth0',
      netns: pod,
      conf: netConf(ferryd),
      cniArgs: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=shop;K8S_POD_NAME=db-0',
    });
    expect(add.exitCode, add.stdout).toBe(0);
    expect((await link(pod, 'fast0'))?.address).toBe(DEVICES[1]?.mac);
    expect(await inNetns(pod, 'ip', '-br', 'addr', 'show', 'fast0')).toContain('198.51.100.10/24');
    expect(await inNetns(pod, 'ip', 'route', 'show', '203.0.113.0/24')).toContain('via 198.51.100.1 dev fast0');
    const ips = (add.json as { ips: { address: string; interface: number }[] }).ips;
    expect(ips).toContainEqual({ address: '198.51.100.10/24', interface: 2 });
    // A pod without a reservation does not get that device from the group.
    const other = await useNetns(t, 'pod');
    const greedy = await runShim(node, 'ADD', {
      containerId: newContainerId(),
      ifName: 'eth0',
      netns: other,
      conf: twoNics(ferryd),
    });
    expect(greedy.json).toMatchObject({
      code: 106,
      msg: 'allocate 2 delegated NICs of group "frontend": only 1 free on this node',
    });
  });

  test('asking for more devices than are free fails with 106 and leaves nothing behind', async (t) => {
    const { node, ferryd } = await useDeviceNode(t);
    const pod = await useNetns(t, 'pod');
    const conf = netConf(ferryd, { delegatedNICs: { group: 'frontend', count: 3 } });
    const add = await runShim(node, 'ADD', { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf });
    expect(add.json).toMatchObject({ code: 106 });
    expect(await linkNames(pod)).toEqual(['lo']);
    expect((await linkNames(node)).filter((n) => n.startsWith('fry'))).toEqual([]);
    expect(await ferryd.assignedAddresses()).toEqual([]);
    await expectHome(node, ferryd);
  });

  test('a failure after the devices moved brings them home (rollback)', async (t) => {
    const { node, ferryd } = await useDeviceNode(t);
    const pod = await useNetns(t, 'pod');
    // net2 already exists in the pod: the second device cannot take its name, after the first one moved.
    await inNetns(pod, 'ip', 'link', 'add', 'net2', 'type', 'veth', 'peer', 'name', 'x2');
    const add = await runShim(node, 'ADD', {
      containerId: newContainerId(),
      ifName: 'eth0',
      netns: pod,
      conf: twoNics(ferryd),
    });
    expect(add.json).toMatchObject({ code: 102 });
    expect(await linkNames(pod)).toEqual(['lo', 'net2', 'x2']);
    await expectHome(node, ferryd);
    expect(await ferryd.assignedAddresses()).toEqual([]);
  });

  test('BackendNIC devices are refused at start with a message that names them', async (t) => {
    const node = await useNodeNetns(t);
    await expect(
      useFerryd(t, {
        netns: node,
        config: { delegatedDevices: [{ mac: '02:fe:00:00:00:09', group: 'rdma', nicType: 'BackendNIC' }] },
      }),
    ).rejects.toThrow(/delegatedDevices\[0\]\.nicType: BackendNIC \(RDMA\/InfiniBand\) is not supported/);
  });
});
