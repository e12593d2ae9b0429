/**
 * Ferry as a secondary network's plugin, driven as Multus drives a delegate (in place of host-device or
 * sriov-cni): the pod's primary interface eth0 is another plugin's (the reference ptp, with host-local),
 * and Ferry's network "sriov" (`infraNIC: false`) is ADDed under CNI_IFNAME net1 with the device the SR-IOV
 * device plugin allocated as `runtimeConfig.deviceID` (a PCI address, the fake sysfs maps it to a veth
 * stand-in) and the kubelet's K8S_POD_* args. No veth: the attachment is the device itself, addressed from
 * the network's pool. It comes home however the pod renamed it, with ferryd up and with ferryd SIGKILLed
 * before the DEL; eth0 is never touched.
 */

import { resultSchemaFor } from '@ferry/shared-types/cni/result';
import { SUPPORTED_VERSIONS, specHas } from '@ferry/shared-types/cni/versions';
import { describe, expect, test } from 'vitest';
import { newContainerId } from '../fixtures/conf';
import { type Conflist, conflistAdd, conflistCheck, conflistDel } from '../fixtures/conflist';
import { commitJournalOf, FAST_PASSES, type Ferryd } from '../fixtures/ferryd';
import { addresses, link, linkNames, links } from '../fixtures/kernel';
import { inNetns, type TestNetns, useNetns } from '../fixtures/netns';
import { ferryEntries, podCniArgs, untilNetworkStatus } from '../fixtures/network-status';
import { type GroupDevice, type KubePodRef, type PodNode, putPod, usePodNode } from '../fixtures/pod-node';
import { pendingFiles } from '../fixtures/queue';
import type { Scope } from '../fixtures/scope';
import { runShim } from '../fixtures/shim';
import { useTmpDir } from '../fixtures/tmp';
import { waitFor } from '../fixtures/wait';

const VF1: GroupDevice = { name: 'ens2f0v1', mac: '02:fe:00:00:c0:01', group: 'sriov', pciAddress: '0000:18:02.1' };
const VF2: GroupDevice = { name: 'ens2f0v2', mac: '02:fe:00:00:c0:02', group: 'sriov', pciAddress: '0000:18:02.2' };

const useSriovNode = (t: Scope, config: Record<string, unknown> = {}) =>
  usePodNode(t, [VF1, VF2], {
    networks: [
      {
        name: 'sriov',
        infraNIC: false,
        ipv4: { subnet: '192.168.50.0/24', rangeStart: '192.168.50.10', gateway: '192.168.50.1' },
      },
    ],
    tenancy: { deviceGroups: [{ group: 'sriov', namespaces: ['team-a'] }], staticAddresses: [] },
    ...config,
  });

/** The NetworkAttachmentDefinition's config as Multus hands it to libcni: Ferry, asking for the device ID. */
function nadOf(ferryd: Ferryd, cniVersion: string): Conflist {
  return {
    cniVersion,
    name: 'sriov',
    plugins: [
      {
        type: 'ferry-cni',
        capabilities: { deviceID: true },
        infraNIC: false,
        daemonSocket: ferryd.socket,
        logFile: `${ferryd.dir}/cni.log`,
        deleteQueue: ferryd.deleteQueue,
        commitJournal: commitJournalOf(ferryd),
        logLevel: 'debug',
        daemonTimeouts: { addWaitMs: 3000, delWaitMs: 300, requestMs: 5000 },
      },
    ],
  };
}

interface MultusPod {
  pod: TestNetns;
  ref: KubePodRef;
  containerId: string;
  /** The primary interface's address, as the other plugin gave it. */
  eth0: string[];
  /** The delegate call for net<N>, with the device the device plugin allocated. */
  delegate(ifName: string, device: GroupDevice): Parameters<typeof conflistAdd>[2];
}

/** A pod whose eth0 is ptp's (the cluster's default network), as Multus sets it up before its delegates. */
async function useMultusPod(t: Scope, n: PodNode, cniVersion: string): Promise<MultusPod> {
  const pod = await useNetns(t, 'pod');
  const ref = await putPod(n.api, 'team-a', 'router-6f7d8c9b5-k2x4q');
  const containerId = newContainerId();
  const primary = {
    containerId,
    ifName: 'eth0',
    netns: pod,
    plugin: 'ptp',
    cniArgs: podCniArgs(ref.namespace, ref.name, ref.uid),
    conf: {
      // The default network is another conflist: Debian's ptp speaks up to 1.0.0.
      cniVersion: cniVersion === '1.1.0' ? '1.0.0' : cniVersion,
      name: 'default',
      type: 'ptp',
      ipMasq: false,
      ipam: { type: 'host-local', subnet: '10.250.0.0/24', dataDir: useTmpDir(t, 'host-local') },
    },
  };
  const add = await runShim(n.node, 'ADD', primary);
  expect(add.exitCode, add.stdout).toBe(0);
  t.onTestFinished(async () => {
    await runShim(n.node, 'DEL', primary);
  });
  return {
    pod,
    ref,
    containerId,
    eth0: await addresses(pod, 'eth0'),
    delegate: (ifName, device) => ({
      containerId,
      ifName,
      netns: pod,
      capabilityArgs: { deviceID: device.pciAddress },
      cniArgs: podCniArgs(ref.namespace, ref.name, ref.uid),
    }),
  };
}

async function deviceStates(ferryd: Ferryd): Promise<string[]> {
  const r = (await ferryd.request('GET', '/v1/operator/devices')).json as { devices: { state: string }[] };
  return r.devices.map((d) => d.state);
}

/** The device is on the node under its own name, with its MAC, no marker, in the default link group. */
async function expectHome(node: TestNetns, d: GroupDevice): Promise<void> {
  const l = await link(node, d.name);
  expect(l?.address, `${d.name} is home`).toBe(d.mac);
  expect(l?.ifalias ?? '', `${d.name} carries no marker`).toBe('');
  expect(l?.group, `${d.name} is back in the default link group`).toBe('default');
}

async function renameInPod(pod: TestNetns, from: string, to: string, alias?: string): Promise<void> {
  await inNetns(pod, 'ip', 'link', 'set', from, 'down');
  await inNetns(pod, 'ip', 'link', 'set', from, 'name', to);
  if (alias !== undefined) await inNetns(pod, 'ip', 'link', 'set', to, 'alias', alias);
}

describe.for(SUPPORTED_VERSIONS)('a secondary network as a Multus delegate, cniVersion %s', (cniVersion) => {
  test('net1 is the device the runtime names: ADD → CHECK → DEL → DEL; no veth, eth0 untouched, the device home', async (t) => {
    const n = await useSriovNode(t);
    const m = await useMultusPod(t, n, cniVersion);
    const nad = nadOf(n.ferryd, cniVersion);
    const call = m.delegate('net1', VF1);
    const nodeBefore = await linkNames(n.node);

    const add = await conflistAdd(n.node, nad, call);
    expect(add.exitCode, JSON.stringify(add.json)).toBe(0);
    // The result lists the device in the pod and its address, in this version's shape.
    expect(resultSchemaFor(cniVersion).safeParse(add.json).success).toBe(true);
    const result = add.json as { interfaces: Record<string, unknown>[]; ips: Record<string, unknown>[] };
    expect(result.interfaces).toEqual([
      {
        name: 'net1',
        mac: VF1.mac,
        sandbox: m.pod.path,
        ...(specHas.ipVersion(cniVersion) ? {} : { pciID: VF1.pciAddress }),
      },
    ]);
    expect(result.ips).toEqual([
      {
        ...(specHas.ipVersion(cniVersion) ? { version: '4' } : {}),
        address: '192.168.50.10/24',
        gateway: '192.168.50.1',
        interface: 0,
      },
    ]);
    // In the pod: eth0 as ptp made it, and the device itself as net1; on the node: no veth of Ferry's.
    expect(await linkNames(m.pod)).toEqual(['eth0', 'lo', 'net1']);
    expect((await link(m.pod, 'net1'))?.address).toBe(VF1.mac);
    expect(await addresses(m.pod, 'net1')).toEqual(['192.168.50.10/24']);
    expect(await addresses(m.pod, 'eth0')).toEqual(m.eth0);
    expect(await linkNames(n.node)).toEqual(nodeBefore.filter((l) => l !== VF1.name));
    expect((await deviceStates(n.ferryd)).sort()).toEqual(['assigned', 'free']);

    if (specHas.check(cniVersion)) {
      const check = await conflistCheck(n.node, nad, call, add.json);
      expect(check.exitCode, JSON.stringify(check.json)).toBe(0);
    }
    for (const k of [1, 2]) {
      const del = await conflistDel(n.node, nad, call, add.json);
      expect(del.exitCode, `DEL #${k}: ${JSON.stringify(del.json)}`).toBe(0);
    }
    expect(await linkNames(m.pod)).toEqual(['eth0', 'lo']);
    expect(await addresses(m.pod, 'eth0')).toEqual(m.eth0);
    await expectHome(n.node, VF1);
    expect(await linkNames(n.node)).toEqual(nodeBefore);
    expect(await n.ferryd.assignedAddresses()).toEqual([]);
    await waitFor('the device free', async () => (await deviceStates(n.ferryd)).every((s) => s === 'free'));
  });
});

test("network-status lists the secondary network's device with its address, MAC and PCI address; DEL takes it out", async (t) => {
  const n = await useSriovNode(t, FAST_PASSES);
  const m = await useMultusPod(t, n, '1.0.0');
  const nad = nadOf(n.ferryd, '1.0.0');
  const add = await conflistAdd(n.node, nad, m.delegate('net1', VF1));
  expect(add.exitCode, JSON.stringify(add.json)).toBe(0);
  const status = await untilNetworkStatus(n.api, m.ref, (s) => ferryEntries(s).length === 1, 'secondary: ADD');
  expect(status.map(({ 'dev.ferry.attachment': at, ...e }) => ({ ...e, at }))).toEqual([
    {
      name: 'sriov',
      interface: 'net1',
      ips: ['192.168.50.10'],
      mac: VF1.mac,
      default: false,
      'device-info': { type: 'pci', version: '1.1.0', pci: { 'pci-address': VF1.pciAddress } },
      at: { network: 'sriov', containerId: m.containerId, ifName: 'net1' },
    },
  ]);
  expect((await conflistDel(n.node, nad, m.delegate('net1', VF1), add.json)).exitCode).toBe(0);
  await untilNetworkStatus(n.api, m.ref, (s) => s === undefined, 'secondary: DEL');
});

test("renamed in the pod with its alias overwritten, the device is found by ferryd's record and brought home under its own name", async (t) => {
  const n = await useSriovNode(t, { reconcile: { intervalSec: 3600, staleGraceSec: 3600 } });
  const m = await useMultusPod(t, n, '1.0.0');
  const nad = nadOf(n.ferryd, '1.0.0');
  const add = await conflistAdd(n.node, nad, m.delegate('net1', VF1));
  expect(add.exitCode, JSON.stringify(add.json)).toBe(0);
  // A router in the pod names its uplink its own way, and writes its own alias over Ferry's marker.
  await renameInPod(m.pod, 'net1', 'uplink', 'wan uplink of the router');
  const del = await conflistDel(n.node, nad, m.delegate('net1', VF1), add.json);
  expect(del.exitCode, JSON.stringify(del.json)).toBe(0);
  expect(await linkNames(m.pod)).toEqual(['eth0', 'lo']);
  expect(await addresses(m.pod, 'eth0')).toEqual(m.eth0);
  await expectHome(n.node, VF1);
});

test('ferryd SIGKILLed before the DELs of net1 and net2: each DEL takes only its own device home (by its marker, or, alias overwritten, by prevResult as frt<mac>), eth0 untouched; ferryd drains the queue and renames the travelled device home by MAC', async (t) => {
  const n = await useSriovNode(t, FAST_PASSES);
  const m = await useMultusPod(t, n, '1.0.0');
  const nad = nadOf(n.ferryd, '1.0.0');
  const add1 = await conflistAdd(n.node, nad, m.delegate('net1', VF1));
  expect(add1.exitCode, JSON.stringify(add1.json)).toBe(0);
  const add2 = await conflistAdd(n.node, nad, m.delegate('net2', VF2));
  expect(add2.exitCode, JSON.stringify(add2.json)).toBe(0);
  expect(await linkNames(m.pod)).toEqual(['eth0', 'lo', 'net1', 'net2']);
  await untilNetworkStatus(n.api, m.ref, (s) => ferryEntries(s).length === 2, 'secondary: two ADDs');
  // The app renames both; the second one's alias it overwrites too.
  await renameInPod(m.pod, 'net1', 'wan0');
  await renameInPod(m.pod, 'net2', 'lan0', 'the app was here');
  await n.ferryd.kill('SIGKILL');

  // net1's DEL: its marked device goes home under its name; net2's device (no marker) is not net1's.
  const del1 = await conflistDel(n.node, nad, m.delegate('net1', VF1), add1.json);
  expect(del1.exitCode, JSON.stringify(del1.json)).toBe(0);
  expect(await linkNames(m.pod)).toEqual(['eth0', 'lan0', 'lo']);
  await expectHome(n.node, VF1);
  // net2's DEL: prevResult lists the device, so it goes home, under its travel name (the alias said no other).
  const del2 = await conflistDel(n.node, nad, m.delegate('net2', VF2), add2.json);
  expect(del2.exitCode, JSON.stringify(del2.json)).toBe(0);
  expect(await linkNames(m.pod)).toEqual(['eth0', 'lo']);
  expect(await addresses(m.pod, 'eth0')).toEqual(m.eth0);
  const travelled = (await links(n.node)).find((l) => l.address === VF2.mac);
  expect(travelled?.ifname).toBe(`frt${VF2.mac.replaceAll(':', '')}`.slice(0, 15));
  expect(pendingFiles(n.ferryd.deleteQueue)).toHaveLength(2);

  await n.ferryd.start();
  await waitFor('the travelled device renamed home', async () => (await link(n.node, VF2.name))?.address === VF2.mac);
  await expectHome(n.node, VF2);
  expect(await n.ferryd.assignedAddresses()).toEqual([]);
  await waitFor('both devices free', async () => (await deviceStates(n.ferryd)).every((s) => s === 'free'));
  expect(pendingFiles(n.ferryd.deleteQueue)).toEqual([]);
  await untilNetworkStatus(n.api, m.ref, (s) => s === undefined, 'secondary: queued DELs applied');
});
