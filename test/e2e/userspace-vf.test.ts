/**
 * Userspace VFs (issue 30, goal 5): a VF bound to vfio-pci for DPDK has no netdev. On a fake sysfs tree
 * (a PF, a netdev VF with a veth as its netdev, a vfio-bound VF without `net/` in IOMMU group 51), with
 * the groups as the SR-IOV device plugin's selectors make them (`drivers: ["vfio-pci"]` userspace,
 * `drivers: ["iavf"]` netdev), the stand-in API server and the real shim:
 * - a pod asking for the userspace VF (`userspace: true`) gets it recorded as held; no link moves, the
 *   pod's netns holds eth0 alone, the result lists it without a MAC with its PCI address, network-status
 *   carries its device-info; DEL (twice) releases it;
 * - the device plugin's Allocate gives the container /dev/vfio/vfio and /dev/vfio/51 (DeviceSpecs);
 * - a netdev asked where the device is a userspace one, and the reverse, is 116 naming the device and the
 *   group: nothing built, nothing stored, another pod's userspace VF still held.
 */
import { expect, test } from 'vitest';
import { netConf, newContainerId } from '../fixtures/conf';
import type { Ferryd } from '../fixtures/ferryd';
import { useFerryd } from '../fixtures/ferryd';
import { linkNames } from '../fixtures/kernel';
import { type KubeApi, podObject, useKubeApi } from '../fixtures/kube-api';
import { type StandInKubelet, useStandInKubelet } from '../fixtures/kubelet-plugins';
import { type TestNetns, useNetns } from '../fixtures/netns';
import { ferryEntries, podCniArgs, untilNetworkStatus } from '../fixtures/network-status';
import { useNodeNetns } from '../fixtures/node';
import { LOOKUP_TIMEOUT_MS, NODE_NAME } from '../fixtures/pod-node';
import type { Scope } from '../fixtures/scope';
import { runShim } from '../fixtures/shim';
import { useSriovNode } from '../fixtures/sysfs';

const PF = '0000:3b:00.0';
const NETDEV_VF = '0000:3b:02.0';
const USERSPACE_VF = '0000:3b:02.1';
const IOMMU_GROUP = 51;

interface Device {
  id: string;
  group: string;
  state: string;
  assignedTo?: { containerId: string; ifName: string };
}

interface UserspaceNode {
  node: TestNetns;
  api: KubeApi;
  ferryd: Ferryd;
  baseline: string[];
}

async function useUserspaceNode(t: Scope, kubelet?: StandInKubelet): Promise<UserspaceNode> {
  const node = await useNodeNetns(t);
  const api = await useKubeApi(t, { netns: node });
  const sriov = await useSriovNode(t, node);
  await sriov.addPf({ address: PF, deviceId: '1593', driver: 'ice', netdev: 'ens3f0', mac: '02:fe:00:00:3b:00' });
  await sriov.addVf({
    address: NETDEV_VF,
    pf: PF,
    vfIndex: 0,
    driver: 'iavf',
    netdev: 'ens3f0v0',
    mac: '02:fe:00:00:3b:20',
    iommuGroup: 50,
  });
  await sriov.addVf({ address: USERSPACE_VF, pf: PF, vfIndex: 1, driver: 'vfio-pci', iommuGroup: IOMMU_GROUP });
  const ferryd = await useFerryd(t, {
    netns: node,
    config: {
      cluster: {
        nodeName: NODE_NAME,
        routing: 'none',
        kubernetes: { kubeconfig: api.kubeconfig, pods: { lookupTimeoutMs: LOOKUP_TIMEOUT_MS } },
      },
      delegatedDevices: [
        { drivers: ['vfio-pci'], group: 'dpdk' },
        { drivers: ['iavf'], group: 'sriov' },
      ],
      sysfsRoot: sriov.sysfs.root,
      tenancy: {
        deviceGroups: [
          { group: 'dpdk', namespaces: ['team-a'] },
          { group: 'sriov', namespaces: ['team-a'] },
        ],
        staticAddresses: [],
      },
      ...(kubelet ? { devicePlugin: { kubeletDir: kubelet.dir, groups: ['dpdk'] } } : {}),
    },
  });
  const r = await ferryd.request('POST', '/v1/operator/reconcile');
  if (r.status !== 200) throw new Error(`reconcile: ${r.status} ${r.body}`);
  return { node, api, ferryd, baseline: await linkNames(node) };
}

/** The inventory: each device's group, state and holder (not when it was last seen: every scan moves it). */
async function devicesOf(ferryd: Ferryd): Promise<Device[]> {
  const r = await ferryd.request('GET', '/v1/operator/devices');
  expect(r.status, r.body).toBe(200);
  return (JSON.parse(r.body) as { devices: (Device & { lastSeen?: string })[] }).devices.map(
    ({ lastSeen: _, ...d }) => d,
  );
}

const deviceAt = async (ferryd: Ferryd, id: string) => (await devicesOf(ferryd)).find((d) => d.id === id);

async function podAsking(t: Scope, n: UserspaceNode, name: string, nics: unknown[]) {
  const { uid } = await n.api.putPod(podObject('team-a', name, NODE_NAME, { 'ferry.dev/nics': JSON.stringify(nics) }));
  return {
    containerId: newContainerId(),
    ifName: 'eth0',
    netns: await useNetns(t, 'pod'),
    conf: netConf(n.ferryd, { cniVersion: '1.0.0' }),
    cniArgs: podCniArgs('team-a', name, uid),
  };
}

test("a userspace VF's ADD records it held and moves nothing; CHECK passes; DEL (twice) releases it", async (t) => {
  const n = await useUserspaceNode(t);
  expect(await deviceAt(n.ferryd, USERSPACE_VF)).toMatchObject({ group: 'dpdk', state: 'free' });
  const call = await podAsking(t, n, 'dpdk-1', [{ pciAddress: USERSPACE_VF, ifName: 'dpdk0', userspace: true }]);

  const add = await runShim(n.node, 'ADD', call);
  expect(add.exitCode, add.stdout).toBe(0);
  // The result: the InfraNIC's pair, then the userspace device under its name, with its PCI address and
  // no MAC (it has no netdev); no address is the device's.
  const result = add.json as { interfaces: Record<string, unknown>[]; ips: { interface: number }[] };
  expect(result.interfaces.slice(2)).toEqual([{ name: 'dpdk0', sandbox: call.netns.path, pciID: USERSPACE_VF }]);
  expect(result.ips.every((ip) => ip.interface === 1)).toBe(true);
  // Nothing moved: the pod has its eth0 alone, the node every link it had and eth0's host veth.
  expect(await linkNames(call.netns)).toEqual(['eth0', 'lo']);
  expect(await linkNames(n.node)).toEqual([...n.baseline, result.interfaces[0]?.name].sort());
  expect(await deviceAt(n.ferryd, USERSPACE_VF)).toMatchObject({
    state: 'assigned',
    assignedTo: { containerId: call.containerId, ifName: 'dpdk0' },
  });
  const ep = await n.ferryd.request('GET', `/v1/endpoints/${call.containerId}`);
  expect(JSON.parse(ep.body).interfaces[1]).toMatchObject({
    ifName: 'dpdk0',
    nicType: 'DelegatedNIC',
    state: 'committed',
    userspace: true,
    pciAddress: USERSPACE_VF,
  });
  // network-status shows it by its PCI address (device-info, type pci), with no MAC and no address.
  const status = await untilNetworkStatus(
    n.api,
    { namespace: 'team-a', name: 'dpdk-1' },
    (s) => ferryEntries(s).length === 2,
    'both interfaces',
  );
  const dpdk0 = ferryEntries(status).find((e) => e.interface === 'dpdk0');
  expect(dpdk0).toMatchObject({
    ips: [],
    'device-info': { type: 'pci', pci: { 'pci-address': USERSPACE_VF, 'pf-pci-address': PF } },
  });
  expect(dpdk0).not.toHaveProperty('mac');

  const check = await runShim(n.node, 'CHECK', { ...call, conf: { ...call.conf, prevResult: add.json } });
  expect(check.exitCode, check.stdout).toBe(0);

  for (const k of [1, 2]) {
    const del = await runShim(n.node, 'DEL', call);
    expect(del.exitCode, `DEL #${k}: ${del.stdout}`).toBe(0);
  }
  const after = await deviceAt(n.ferryd, USERSPACE_VF);
  expect(after).toMatchObject({ state: 'free' });
  expect(after).not.toHaveProperty('assignedTo');
  expect((await n.ferryd.request('GET', `/v1/endpoints/${call.containerId}`)).status).toBe(404);
  expect(await linkNames(n.node)).toEqual(n.baseline);
});

test("the device plugin's Allocate gives a userspace VF's container /dev/vfio/vfio and its IOMMU group's node", async (t) => {
  const kubelet = await useStandInKubelet(t);
  await useUserspaceNode(t, kubelet);
  await kubelet.waitForDevices('ferry.dev/dpdk', 'the userspace VF', (d) => d.some((x) => x.ID === USERSPACE_VF));
  const a = await kubelet.admit({
    namespace: 'team-a',
    name: 'dpdk-2',
    containers: [{ name: 'app', limits: { 'ferry.dev/dpdk': 1 } }],
  });
  expect(a.devices.app?.['ferry.dev/dpdk']).toEqual([USERSPACE_VF]);
  const rw = (path: string) => ({ containerPath: path, hostPath: path, permissions: 'rw' });
  expect(a.deviceSpecs.app).toEqual([rw('/dev/vfio/vfio'), rw(`/dev/vfio/${IOMMU_GROUP}`)]);
  expect(a.envs.app?.PCIDEVICE_FERRY_DEV_DPDK).toBe(USERSPACE_VF);
});

test('a userspace VF asked for as a netdev, and a netdev VF asked for as a userspace one: 116 naming the device and the group; nothing built, nothing stored lost', async (t) => {
  const n = await useUserspaceNode(t);
  // Another pod holds the userspace VF: what the refusals must leave alone.
  const holder = await podAsking(t, n, 'holder', [{ pciAddress: USERSPACE_VF, userspace: true }]);
  expect((await runShim(n.node, 'ADD', holder)).exitCode).toBe(0);
  const before = await devicesOf(n.ferryd);
  const nodeBefore = await linkNames(n.node);

  const cases = [
    {
      nics: [{ pciAddress: USERSPACE_VF }],
      msg: `pod team-a/asks-1: annotation ferry.dev/nics: [0].pciAddress: device ${USERSPACE_VF} of group "dpdk" is a userspace device (bound to vfio-pci, no netdev), asked for as a netdev: ask with "userspace": true`,
    },
    {
      nics: [{ pciAddress: NETDEV_VF, userspace: true }],
      msg: `pod team-a/asks-2: annotation ferry.dev/nics: [0].pciAddress: device ${NETDEV_VF} of group "sriov" is a netdev, asked for as a userspace device ("userspace": true): ask without it, or for a device of a group of userspace devices (drivers ["vfio-pci"])`,
    },
  ];
  for (const [k, c] of cases.entries()) {
    const call = await podAsking(t, n, `asks-${k + 1}`, c.nics);
    const add = await runShim(n.node, 'ADD', call);
    expect(add.exitCode).toBe(1);
    expect(add.json).toEqual({ cniVersion: '1.0.0', code: 116, msg: c.msg });
    expect(await linkNames(call.netns)).toEqual(['lo']);
    expect(await linkNames(n.node)).toEqual(nodeBefore);
    expect((await n.ferryd.request('GET', `/v1/endpoints/${call.containerId}`)).status).toBe(404);
    expect(await devicesOf(n.ferryd)).toEqual(before);
  }
  expect(await deviceAt(n.ferryd, USERSPACE_VF)).toMatchObject({
    state: 'assigned',
    assignedTo: { containerId: holder.containerId },
  });
  expect(await deviceAt(n.ferryd, NETDEV_VF)).toMatchObject({ state: 'free' });
});
