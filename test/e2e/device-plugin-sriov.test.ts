/**
 * ferryd's device plugin over SR-IOV VFs, as the SR-IOV network device plugin's users know it: a fake sysfs
 * tree (fixtures/sysfs.ts: PFs and VFs with physfn/virtfn links and numa_node, veths as their netdevs)
 * and the stand-in kubelet on the real deviceplugin/v1beta1 protos. Device IDs are PCI addresses with the
 * NUMA node as TopologyInfo; the preferred allocation keeps a pod on one NUMA node (one PF for a group that
 * asks); Allocate sets PCIDEVICE_<RESOURCE> and writes the NPWG device-info file that a DEL removes; the
 * pod's network-status carries the same device-info.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { netConf, newContainerId } from '../fixtures/conf';
import type { Ferryd } from '../fixtures/ferryd';
import { FAST_PASSES, useFerryd } from '../fixtures/ferryd';
import { link } from '../fixtures/kernel';
import { type KubeApi, useKubeApi } from '../fixtures/kube-api';
import { type StandInKubelet, useStandInKubelet } from '../fixtures/kubelet-plugins';
import { type TestNetns, useNetns } from '../fixtures/netns';
import { ferryEntries, podCniArgs, untilNetworkStatus } from '../fixtures/network-status';
import { useNodeNetns } from '../fixtures/node';
import { NODE_NAME, putPod } from '../fixtures/pod-node';
import type { Scope } from '../fixtures/scope';
import { runShim } from '../fixtures/shim';
import { useSriovNode } from '../fixtures/sysfs';
import { useTmpDir } from '../fixtures/tmp';

const SRIOV = 'ferry.dev/sriov';
const PACKED = 'ferry.dev/packed';

interface Pf {
  address: string;
  netdev: string;
  mac: string;
  numaNode: number;
}
interface Vf extends Pf {
  pf: string;
  vfIndex: number;
  group: 'sriov' | 'packed';
}

const pf = (address: string, netdev: string, n: number, numaNode: number): Pf => ({
  address,
  netdev,
  mac: `02:aa:00:00:00:${n.toString(16).padStart(2, '0')}`,
  numaNode,
});
const vf = (of: Pf, address: string, vfIndex: number, group: Vf['group']): Vf => ({
  address,
  netdev: `${of.netdev}v${vfIndex}`,
  mac: `02:bb:${of.mac.slice(-2)}:00:00:${vfIndex.toString(16).padStart(2, '0')}`,
  numaNode: of.numaNode,
  pf: of.address,
  vfIndex,
  group,
});

// "sriov": a VF on NUMA node 0, three on node 1 over two PFs, one with no affinity (numa_node -1).
const PF_A = pf('0000:3b:00.0', 'ens1f0', 1, 0);
const PF_B = pf('0000:5e:00.0', 'ens2f0', 2, 1);
const PF_C = pf('0000:5e:00.1', 'ens2f1', 3, 1);
const PF_D = pf('0000:af:00.0', 'ens3f0', 4, -1);
// "packed" (devicePlugin.preferSamePf): one NUMA node, two PFs.
const PF_E = pf('0000:86:00.0', 'ens4f0', 5, 0);
const PF_F = pf('0000:86:00.1', 'ens4f1', 6, 0);
const A0 = vf(PF_A, '0000:3b:02.0', 0, 'sriov');
const B0 = vf(PF_B, '0000:5e:02.0', 0, 'sriov');
const C0 = vf(PF_C, '0000:5e:0a.0', 0, 'sriov');
const C1 = vf(PF_C, '0000:5e:0a.1', 1, 'sriov');
const D0 = vf(PF_D, '0000:af:02.0', 0, 'sriov');
const E0 = vf(PF_E, '0000:86:02.0', 0, 'packed');
const F0 = vf(PF_F, '0000:86:0a.0', 0, 'packed');
const F1 = vf(PF_F, '0000:86:0a.1', 1, 'packed');
const PFS = [PF_A, PF_B, PF_C, PF_D, PF_E, PF_F];
const VFS = [A0, B0, C0, C1, D0, E0, F0, F1];
const ids = (...vfs: Vf[]) => vfs.map((v) => v.address);
const allHealthy = (n: number) => (devices: { health: string }[]) =>
  devices.length === n && devices.every((d) => d.health === 'Healthy');

interface SriovServedNode {
  node: TestNetns;
  ferryd: Ferryd;
  deviceInfoDir: string;
  api: KubeApi | undefined;
}

/** A node with the PFs and VFs above, its ferryd serving both groups; with `pods`, watching its pods too. */
async function useSriovServedNode(t: Scope, kubelet: StandInKubelet, { pods = false } = {}): Promise<SriovServedNode> {
  const node = await useNodeNetns(t);
  const sriov = await useSriovNode(t, node);
  for (const p of PFS) await sriov.addPf({ ...p, driver: 'ice', deviceId: '1593' });
  for (const v of VFS) await sriov.addVf({ ...v, driver: 'iavf' });
  // Not there yet: Allocate makes it (spec §4.1.1).
  const deviceInfoDir = join(useTmpDir(t, 'devinfo'), 'dp');
  const api = pods ? await useKubeApi(t, { netns: node }) : undefined;
  const ferryd = await useFerryd(t, {
    netns: node,
    config: {
      delegatedDevices: VFS.map((v) => ({ mac: v.mac, group: v.group })),
      sysfsRoot: sriov.sysfs.root,
      devicePlugin: { kubeletDir: kubelet.dir, deviceInfoDir, preferSamePf: ['packed'] },
      ...FAST_PASSES,
      ...(api
        ? {
            cluster: {
              nodeName: NODE_NAME,
              routing: 'none',
              kubernetes: { kubeconfig: api.kubeconfig, pods: { lookupTimeoutMs: 1500 } },
            },
          }
        : {}),
    },
  });
  await kubelet.waitForDevices(SRIOV, 'every VF healthy', allHealthy(5));
  await kubelet.waitForDevices(PACKED, 'every VF healthy', allHealthy(3));
  return { node, ferryd, deviceInfoDir, api };
}

const fileOf = (dir: string, resource: string, v: Vf) =>
  join(dir, `${resource.replace('/', '-')}-${v.address}-device.json`);
const deviceInfoOf = (v: Vf) => ({
  type: 'pci',
  version: '1.1.0',
  pci: { 'pci-address': v.address, 'pf-pci-address': v.pf },
});

test('ListAndWatch: each VF by its PCI address with its NUMA node; the preferred allocation keeps a pod on one NUMA node where the kubelet would mix them, and on one PF for the group that asks; Allocate sets PCIDEVICE_ and writes the device-info files', async (t) => {
  const kubelet = await useStandInKubelet(t);
  const { deviceInfoDir } = await useSriovServedNode(t, kubelet);
  // TopologyInfo from numa_node; -1 (no affinity) is none.
  expect(kubelet.devices(SRIOV)).toEqual([
    { ID: A0.address, health: 'Healthy', numaNodes: [0] },
    { ID: B0.address, health: 'Healthy', numaNodes: [1] },
    { ID: C0.address, health: 'Healthy', numaNodes: [1] },
    { ID: C1.address, health: 'Healthy', numaNodes: [1] },
    { ID: D0.address, health: 'Healthy' },
  ]);
  expect(kubelet.devices(PACKED).map((d) => d.numaNodes)).toEqual([[0], [0], [0]]);
  expect(existsSync(deviceInfoDir)).toBe(false);

  const two = { [SRIOV]: 2 };
  const a = await kubelet.admit({ namespace: 'team-a', name: 'numa', containers: [{ name: 'app', limits: two }] });
  // The kubelet alone would take the first two: A0 on node 0, B0 on node 1.
  expect(a.candidates.app?.[SRIOV]).toEqual(ids(A0, B0, C0, C1, D0));
  // ferryd keeps them on node 1; the group does not ask for one PF, so B0 and C0 (two PFs) will do.
  expect(a.devices.app?.[SRIOV]).toEqual(ids(B0, C0));
  expect(a.envs.app).toEqual({
    FERRY_DEVICES_SRIOV: `${B0.mac},${C0.mac}`,
    PCIDEVICE_FERRY_DEV_SRIOV: `${B0.address},${C0.address}`,
  });

  const b = await kubelet.admit({
    namespace: 'team-a',
    name: 'packed',
    containers: [{ name: 'app', limits: { [PACKED]: 2 } }],
  });
  expect(b.candidates.app?.[PACKED]).toEqual(ids(E0, F0, F1));
  // preferSamePf: both of PF_F, where the NUMA node alone would take E0 and F0.
  expect(b.devices.app?.[PACKED]).toEqual(ids(F0, F1));
  expect(b.envs.app).toMatchObject({ PCIDEVICE_FERRY_DEV_PACKED: `${F0.address},${F1.address}` });

  // One file per allocated device, in the spec's format and name.
  expect(readdirSync(deviceInfoDir).sort()).toEqual(
    [
      fileOf(deviceInfoDir, SRIOV, B0),
      fileOf(deviceInfoDir, SRIOV, C0),
      fileOf(deviceInfoDir, PACKED, F0),
      fileOf(deviceInfoDir, PACKED, F1),
    ]
      .map((f) => f.slice(deviceInfoDir.length + 1))
      .sort(),
  );
  expect(readdirSync(deviceInfoDir)).toContain('ferry.dev-sriov-0000:5e:02.0-device.json');
  for (const [resource, v] of [
    [SRIOV, B0],
    [SRIOV, C0],
    [PACKED, F0],
    [PACKED, F1],
  ] as const)
    expect(JSON.parse(readFileSync(fileOf(deviceInfoDir, resource, v), 'utf8'))).toEqual(deviceInfoOf(v));
});

/** The pod's eth0 ADD as the kubelet's runtime runs it (K8S_POD_* in CNI_ARGS). */
async function podCall(t: Scope, ferryd: Ferryd, pod: { namespace: string; name: string; uid: string }) {
  return {
    containerId: newContainerId(),
    ifName: 'eth0',
    netns: await useNetns(t, 'pod'),
    conf: netConf(ferryd),
    cniArgs: podCniArgs(pod.namespace, pod.name, pod.uid),
  };
}

test("the ADD gives the pod its VF and network-status the device-info of the file; the DEL removes the file, but not the next pod's when the kubelet gave it the device before the old DEL; ferryd stopping removes the rest", async (t) => {
  const kubelet = await useStandInKubelet(t);
  const { node, ferryd, deviceInfoDir, api } = await useSriovServedNode(t, kubelet, { pods: true });
  if (!api) throw new Error('no API server');
  const one = [{ name: 'app', limits: { [SRIOV]: 1 } }];
  const web1 = await putPod(api, 'team-a', 'web-1');
  const a = await kubelet.admit({ namespace: 'team-a', name: 'web-1', containers: one });
  expect(a.devices.app?.[SRIOV]).toEqual(ids(A0));
  const file = fileOf(deviceInfoDir, SRIOV, A0);
  expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(deviceInfoOf(A0));

  const call1 = await podCall(t, ferryd, web1);
  const add1 = await runShim(node, 'ADD', call1);
  expect(add1.exitCode, add1.stdout).toBe(0);
  expect((await link(call1.netns, 'net1'))?.address).toBe(A0.mac);
  // What Multus would have copied from the file, Ferry writes itself.
  const status = await untilNetworkStatus(
    api,
    web1,
    (s) => ferryEntries(s).some((e) => e.interface === 'net1'),
    'the VF in network-status',
  );
  expect(ferryEntries(status).find((e) => e.interface === 'net1')?.['device-info']).toEqual(
    JSON.parse(readFileSync(file, 'utf8')),
  );

  // The other VFs go to another pod; web-1 is deleted, and the kubelet gives A0 to web-2 at once, before
  // web-1's DEL: Allocate writes A0's file again.
  await kubelet.admit({ namespace: 'team-a', name: 'filler', containers: [{ name: 'app', limits: { [SRIOV]: 4 } }] });
  kubelet.forget('team-a', 'web-1');
  const web2 = await putPod(api, 'team-a', 'web-2');
  const b = await kubelet.admit({ namespace: 'team-a', name: 'web-2', containers: one });
  expect(b.devices.app?.[SRIOV]).toEqual(ids(A0));
  // web-1's DEL (twice): A0's file is web-2's now and stays.
  for (const n of [1, 2]) expect((await runShim(node, 'DEL', call1)).exitCode, `DEL #${n}`).toBe(0);
  expect(existsSync(file)).toBe(true);

  const call2 = await podCall(t, ferryd, web2);
  const add2 = await runShim(node, 'ADD', call2);
  expect(add2.exitCode, add2.stdout).toBe(0);
  expect((await link(call2.netns, 'net1'))?.address).toBe(A0.mac);
  // web-2's DEL releases A0: its file goes.
  for (const n of [1, 2]) expect((await runShim(node, 'DEL', call2)).exitCode, `DEL #${n}`).toBe(0);
  expect(existsSync(file)).toBe(false);

  // The filler's files (its VFs with a PCI address) are there until ferryd stops.
  expect(readdirSync(deviceInfoDir)).toHaveLength(4);
  // Still serving (a ferryd that had crashed would leave them, and stop() would have nothing to stop).
  expect(ferryd.exitCode, ferryd.log().slice(-4000)).toBeUndefined();
  await ferryd.stop();
  expect(ferryd.exitCode, ferryd.log().slice(-4000)).toBe(0);
  expect(readdirSync(deviceInfoDir), ferryd.log().slice(-4000)).toEqual([]);
});
