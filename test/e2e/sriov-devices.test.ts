/**
 * SR-IOV devices as ferryd sees them on a fake sysfs tree (test/fixtures/sysfs.ts) with veth ends as the
 * netdevs: an Intel PF with four VFs and a Mellanox PF with two, and a veth with no PCI parent. Each
 * selector, overlapping groups refused at start, VFs sharing a MAC as two devices, a VF re-created with a
 * new MAC and name keeping its reservation, and a device gone past the grace period leaving the inventory.
 * (A zero MAC cannot be put on a veth, the kernel refuses it: devices/identity.test.ts covers it.)
 */
import { expect, test } from 'vitest';
import { netConf, newContainerId } from '../fixtures/conf';
import { FAST_PASSES, type Ferryd, useFerryd } from '../fixtures/ferryd';
import { link, linkNames } from '../fixtures/kernel';
import { inNetns, type TestNetns, useNetns } from '../fixtures/netns';
import { useNodeNetns } from '../fixtures/node';
import type { Scope } from '../fixtures/scope';
import { runShim } from '../fixtures/shim';
import { type SriovNode, useSriovNode } from '../fixtures/sysfs';
import { waitFor } from '../fixtures/wait';

const INTEL_PF = '0000:3b:00.0';
const MLX_PF = '0000:5e:00.0';
const I = [0, 1, 2, 3].map((i) => `0000:3b:02.${i}`);
const M = [0, 1].map((i) => `0000:5e:00.${i + 2}`);
const SHARED_MAC = '02:5f:00:00:00:aa';
const PLAIN = { name: 'eth9', mac: '02:fe:00:00:00:09' };

interface Device {
  id: string;
  mac?: string;
  group: string;
  state: string;
  hostIfName?: string;
  pciAddress?: string;
  reservation?: { namespace: string; pod: string };
  assignedTo?: { containerId: string };
}

/**
 * The node's functions: Intel VFs 0-2 on iavf, VF 3 on i40evf, VFs 0 and 1 sharing a MAC; Mellanox VF 1's
 * netdev of link type infiniband in sysfs; and a veth that sysfs does not know.
 */
async function useFunctions(t: Scope): Promise<{ node: TestNetns; sriov: SriovNode }> {
  const node = await useNodeNetns(t);
  const sriov = await useSriovNode(t, node);
  await sriov.addPf({ address: INTEL_PF, deviceId: '1593', driver: 'ice', netdev: 'ens1f0', mac: '02:5f:00:00:00:01' });
  for (const [i, address] of I.entries()) {
    const mac = i < 2 ? SHARED_MAC : `02:5f:00:00:01:0${i}`;
    const driver = i === 3 ? 'i40evf' : 'iavf';
    await sriov.addVf({ address, pf: INTEL_PF, vfIndex: i, driver, netdev: `ens1f0v${i}`, mac, numaNode: 0 });
  }
  await sriov.addPf({
    address: MLX_PF,
    vendor: '15b3',
    deviceId: '101d',
    driver: 'mlx5_core',
    netdev: 'ens2f0',
    mac: '02:6f:00:00:00:01',
  });
  for (const [i, address] of M.entries()) {
    await sriov.addVf({
      address,
      pf: MLX_PF,
      vfIndex: i,
      vendor: '15b3',
      deviceId: '101e',
      driver: 'mlx5_core',
      netdev: `ens2f0v${i}`,
      mac: `02:6f:00:00:01:0${i}`,
      ...(i === 1 ? { arpType: 32 } : {}),
    });
  }
  const wire = await useNetns(t, 'wire');
  await inNetns(
    node,
    'ip',
    'link',
    'add',
    PLAIN.name,
    'address',
    PLAIN.mac,
    'type',
    'veth',
    'peer',
    'name',
    'w9',
    'netns',
    wire.path,
  );
  return { node, sriov };
}

const useSriovFerryd = (t: Scope, node: TestNetns, sriov: SriovNode, config: Record<string, unknown>) =>
  useFerryd(t, { netns: node, config: { sysfsRoot: sriov.sysfs.root, ...config } });

async function devices(ferryd: Ferryd): Promise<Device[]> {
  await ferryd.request('POST', '/v1/operator/reconcile');
  return ((await ferryd.request('GET', '/v1/operator/devices')).json as { devices: Device[] }).devices;
}

const byGroup = (list: readonly Device[]) => {
  const out: Record<string, string[]> = {};
  for (const d of list) out[d.group] = [...(out[d.group] ?? []), d.id];
  return out;
};

test('each selector selects its devices from sysfs, by PCI address; a mac entry keeps a veth by MAC', async (t) => {
  const { node, sriov } = await useFunctions(t);
  const ferryd = await useSriovFerryd(t, node, sriov, {
    delegatedDevices: [
      { pfNames: ['ens1f0#0-1'], group: 'range' },
      { rootDevices: [INTEL_PF], pfNames: ['ens1f0#2'], devices: ['1889'], group: 'root' },
      { drivers: ['i40evf'], group: 'driver' },
      { vendors: ['15b3'], linkTypes: ['ether'], group: 'vendor' },
      { devices: ['101e'], linkTypes: ['infiniband'], group: 'ib' },
      { mac: PLAIN.mac, group: 'plain' },
    ],
  });
  const list = await devices(ferryd);
  expect(byGroup(list)).toEqual({
    driver: [I[3]],
    ib: [M[1]],
    plain: [PLAIN.mac],
    range: [I[0], I[1]],
    root: [I[2]],
    vendor: [M[0]],
  });
  // The PFs (they have VFs) are no devices; the VFs that share a MAC are two.
  expect(list.find((d) => d.id === I[1])).toMatchObject({ mac: SHARED_MAC, pciAddress: I[1], hostIfName: 'ens1f0v1' });
  expect(list.find((d) => d.id === PLAIN.mac)).toMatchObject({ mac: PLAIN.mac, state: 'free' });
  expect(list.find((d) => d.id === PLAIN.mac)?.pciAddress).toBeUndefined();
});

test('a device two groups match is refused at start, naming it and both groups', async (t) => {
  const { node, sriov } = await useFunctions(t);
  await expect(
    useSriovFerryd(t, node, sriov, {
      delegatedDevices: [
        { drivers: ['iavf'], group: 'fast' },
        { pfNames: ['ens1f0#2-3'], group: 'dpdk' },
      ],
    }),
  ).rejects.toThrow(
    /delegatedDevices: device 0000:3b:02\.2 \(ens1f0v2\) is matched by the groups "fast" and "dpdk": a device may be in one group only/,
  );
});

test('VFs sharing a MAC go to two pods; a VF re-created with a new MAC and name keeps its reservation, a held one its pod', async (t) => {
  const { node, sriov } = await useFunctions(t);
  const ferryd = await useSriovFerryd(t, node, sriov, {
    delegatedDevices: [{ pfNames: ['ens1f0'], group: 'sriov' }],
    reconcile: { intervalSec: 3600, staleGraceSec: 3600 },
  });
  await devices(ferryd);
  const reserve = await ferryd.request('PUT', `/v1/operator/devices/${I[3]}/reservation`, {
    namespace: 'shop',
    pod: 'db-0',
  });
  expect(reserve.status, reserve.body).toBe(200);
  // By the MAC two VFs share, no device can be named.
  const ambiguous = await ferryd.request('PUT', `/v1/operator/devices/${SHARED_MAC}/reservation`, {
    namespace: 'shop',
    pod: 'db-1',
  });
  expect(ambiguous.body).toMatch(
    /2 devices have this MAC \(0000:3b:02\.0, 0000:3b:02\.1\); name one by its PCI address/,
  );

  // Two pods, one device each: the two VFs with one MAC, each moved by its own name.
  const conf = netConf(ferryd, { delegatedNICs: { group: 'sriov', count: 1 } });
  const pods: { pod: TestNetns; containerId: string }[] = [];
  for (const _ of [1, 2]) {
    const pod = await useNetns(t, 'pod');
    const containerId = newContainerId();
    const add = await runShim(node, 'ADD', { containerId, ifName: 'eth0', netns: pod, conf });
    expect(add.exitCode, add.stdout).toBe(0);
    pods.push({ pod, containerId });
  }
  expect((await link(pods[0]?.pod as TestNetns, 'net1'))?.ifalias).toBe('ferry:host-ifname=ens1f0v0 attachment=eth0');
  expect((await link(pods[1]?.pod as TestNetns, 'net1'))?.ifalias).toBe('ferry:host-ifname=ens1f0v1 attachment=eth0');

  // VF 3 re-created (sriov_numvfs): a new netdev eth42 with a new MAC at its address.
  await sriov.recreateVf(I[3] as string, 'ens1f0v3', { netdev: 'eth42', mac: '02:5f:00:00:02:03' });
  const after = await devices(ferryd);
  expect(after.map((d) => [d.id, d.state])).toEqual([
    [I[0], 'assigned'],
    [I[1], 'assigned'],
    [I[2], 'free'],
    [I[3], 'free'],
  ]);
  expect(after.find((d) => d.id === I[3])).toMatchObject({
    mac: '02:5f:00:00:02:03',
    hostIfName: 'ens1f0v3',
    reservation: { namespace: 'shop', pod: 'db-0' },
  });
  expect(after.find((d) => d.id === I[0])?.assignedTo?.containerId).toBe(pods[0]?.containerId);
  // Renamed home to the name it had.
  expect((await link(node, 'ens1f0v3'))?.address).toBe('02:5f:00:00:02:03');
  expect(await linkNames(node)).not.toContain('eth42');

  for (const { pod, containerId } of pods) {
    const del = await runShim(node, 'DEL', { containerId, ifName: 'eth0', netns: pod, conf });
    expect(del.exitCode, del.stdout).toBe(0);
  }
  expect((await devices(ferryd)).map((d) => d.state)).toEqual(['free', 'free', 'free', 'free']);
});

test('a device found by selectors that is off the node past reconcile.deviceGoneGraceSec leaves the inventory', async (t) => {
  const { node, sriov } = await useFunctions(t);
  const ferryd = await useSriovFerryd(t, node, sriov, {
    delegatedDevices: [{ pfNames: ['ens2f0'], group: 'mlx' }],
    reconcile: { ...FAST_PASSES.reconcile, deviceGoneGraceSec: 1 },
  });
  expect((await devices(ferryd)).map((d) => d.id)).toEqual(M);
  await sriov.removeNetdev(M[1] as string, 'ens2f0v1');
  // First missing, then, past the grace period, not listed at all.
  await waitFor('missing', async () => (await devices(ferryd)).some((d) => d.id === M[1] && d.state === 'missing'));
  await waitFor('gone from the inventory', async () => (await devices(ferryd)).every((d) => d.id !== M[1]), 15_000);
  expect((await devices(ferryd)).map((d) => [d.id, d.state])).toEqual([[M[0], 'free']]);
});
