/**
 * Delegated devices' health at the speed of the kernel's link events: ferryd's link monitor (`ip -o
 * monitor link` in its namespace) rescans the inventory when a device's link changes, and the stand-in
 * kubelet (fixtures/kubelet-plugins.ts, the real protos) gets the new list on ListAndWatch. The inventory's
 * scan runs every 60 s here, so it cannot be what turned a device: the waits below give up long before.
 * Then the monitor itself: killed, it is started again and still works; ferryd gone (stopped, or killed),
 * no monitor is left behind.
 */
import { expect, test } from 'vitest';
import { type TestDevice, useNodeWithDevices } from '../fixtures/device';
import { type Ferryd, useFerryd } from '../fixtures/ferryd';
import { link, links } from '../fixtures/kernel';
import { type KubeletDevice, type StandInKubelet, useStandInKubelet } from '../fixtures/kubelet-plugins';
import { isSubscribed, linkMonitorsIn, parentOf } from '../fixtures/link-monitors';
import { inNetns, plugVeth, type TestNetns } from '../fixtures/netns';
import { useNodeNetns } from '../fixtures/node';
import type { Scope } from '../fixtures/scope';
import { useSriovNode } from '../fixtures/sysfs';
import { logged, waitFor } from '../fixtures/wait';

const RESOURCE = 'ferry.dev/frontend';
const DEVICES: TestDevice[] = [
  { name: 'eth1', mac: '02:fe:00:00:01:01' },
  { name: 'eth2', mac: '02:fe:00:00:01:02' },
];
const [D1, D2] = DEVICES.map((d) => d.mac) as [string, string];
/**
 * Far past the 1 s promised, far short of the 60 s scan: a turn seen within it came from a link event. How
 * soon is printed (latencyMs), not asserted: a loaded machine delays the test's own commands too.
 */
const WAIT_MS = 5000;

const healthy =
  (...macs: string[]) =>
  (devices: KubeletDevice[]) =>
    devices.length === DEVICES.length && devices.every((d) => (d.health === 'Healthy') === macs.includes(d.ID));

async function useServedNode(t: Scope, kubelet: StandInKubelet) {
  const served = await useNodeWithDevices(t, DEVICES, {
    devicePlugin: { kubeletDir: kubelet.dir },
    reconcile: { intervalSec: 60 },
  });
  await kubelet.waitForDevices(RESOURCE, 'both healthy', healthy(D1, D2));
  return served;
}

/** ferryd's one link monitor, once it has subscribed (events before that would be missed by the test's clock). */
async function monitorOf(node: TestNetns, ferryd: Ferryd, other?: number): Promise<number> {
  let pid: number | undefined;
  await waitFor(
    'a subscribed link monitor, child of ferryd',
    async () => {
      const pids = linkMonitorsIn(node).filter((p) => p !== other && parentOf(p) === ferryd.pid);
      pid = pids.length === 1 && isSubscribed(pids[0] as number) ? pids[0] : undefined;
      return pid !== undefined;
    },
    WAIT_MS,
  );
  return pid as number;
}

/**
 * Runs `change` and resolves with how long after its start the first list `cond` accepts reached the
 * kubelet: an upper bound, with the test's own `ip` process in it (its exit is also printed).
 */
async function latencyMs(
  kubelet: StandInKubelet,
  what: string,
  cond: (devices: KubeletDevice[]) => boolean,
  change: () => Promise<unknown>,
): Promise<number> {
  const startMs = performance.now();
  await change();
  const changedMs = performance.now();
  await kubelet.waitForDevices(RESOURCE, what, cond, WAIT_MS);
  const plugin = kubelet.plugin(RESOURCE);
  const i = plugin?.lists.findIndex((l, n) => (plugin.receivedAtMs[n] ?? 0) >= startMs && cond(l)) ?? -1;
  const atMs = plugin?.receivedAtMs[i] ?? Number.NaN;
  console.log(
    `device health: ${what} reached the kubelet ${(atMs - startMs).toFixed(1)} ms after the change began ` +
      `(${(atMs - changedMs).toFixed(1)} ms after its command exited)`,
  );
  return atMs - startMs;
}

/** The name of the far end (in `far`) of the veth `name` in `ns`. */
async function peerOf(ns: TestNetns, name: string, far: TestNetns): Promise<string> {
  const index = (await link(ns, name))?.link_index;
  const peer = (await links(far)).find((l) => l.ifindex === index);
  if (!peer) throw new Error(`no peer of ${name} in ${far.name}`);
  return peer.ifname;
}

const delLink = (node: TestNetns, name: string) => inNetns(node, 'ip', 'link', 'del', name);
/** The device back on the node: one command (a device is present while its link exists, up or not). */
const addDevice = (node: TestNetns, wire: TestNetns, d: TestDevice, peer: string) =>
  plugVeth(node, wire, d.name, d.mac, peer);

test('a device removed from the node is Unhealthy at the kubelet within a second, Healthy again within a second of coming back', async (t) => {
  const kubelet = await useStandInKubelet(t);
  const { node, ferryd, wire } = await useServedNode(t, kubelet);
  await monitorOf(node, ferryd);

  await latencyMs(kubelet, `${D2} removed: Unhealthy`, healthy(D1), () => delLink(node, 'eth2'));
  const [, d2] = DEVICES as [TestDevice, TestDevice];
  await latencyMs(kubelet, `${D2} back: Healthy`, healthy(D1, D2), () => addDevice(node, wire, d2, 'w9'));
  // The operator's view turned with it (the inventory, not only the plugin's list).
  const r = await ferryd.request('GET', '/v1/operator/devices');
  expect((r.json as { devices: { mac: string; state: string }[] }).devices.map((d) => [d.mac, d.state])).toEqual([
    [D1, 'free'],
    [D2, 'free'],
  ]);
});

test("a PF's carrier down (its VFs' netdevs stay) makes its VFs Unhealthy within a second, and carrier back Healthy; another PF's VF stays Healthy", async (t) => {
  const kubelet = await useStandInKubelet(t);
  const node = await useNodeNetns(t);
  const sriov = await useSriovNode(t, node);
  const pf = { address: '0000:3b:00.0', deviceId: '1593', driver: 'ice', netdev: 'pf0', mac: '02:fe:00:00:02:00' };
  const otherPf = { address: '0000:5e:00.0', deviceId: '1593', driver: 'ice', netdev: 'pf1', mac: '02:fe:00:00:03:00' };
  await sriov.addPf(pf);
  await sriov.addPf(otherPf);
  const vfs = [
    { address: '0000:3b:02.0', pf: pf.address, vfIndex: 0, netdev: 'vf0', mac: '02:fe:00:00:02:01' },
    { address: '0000:3b:02.1', pf: pf.address, vfIndex: 1, netdev: 'vf1', mac: '02:fe:00:00:02:02' },
    { address: '0000:5e:02.0', pf: otherPf.address, vfIndex: 0, netdev: 'vf2', mac: '02:fe:00:00:03:01' },
  ];
  for (const vf of vfs) await sriov.addVf({ ...vf, driver: 'iavf' });
  // A veth has carrier while both ends are up: the far end of each PF's stands in for its switch port.
  const ports = new Map<string, string>();
  for (const p of [pf, otherPf]) {
    const port = await peerOf(node, p.netdev, sriov.wire);
    await inNetns(sriov.wire, 'ip', 'link', 'set', port, 'up');
    ports.set(p.netdev, port);
  }
  const ferryd = await useFerryd(t, {
    netns: node,
    config: {
      sysfsRoot: sriov.sysfs.root,
      delegatedDevices: vfs.map((vf) => ({ mac: vf.mac, group: 'frontend' })),
      devicePlugin: { kubeletDir: kubelet.dir },
      reconcile: { intervalSec: 60 },
    },
  });
  // A VF's device ID is its PCI address.
  const [v0, v1, v2] = vfs.map((vf) => vf.address) as [string, string, string];
  const only =
    (...macs: string[]) =>
    (devices: KubeletDevice[]) =>
      devices.length === vfs.length && devices.every((d) => (d.health === 'Healthy') === macs.includes(d.ID));
  await kubelet.waitForDevices(RESOURCE, 'every VF healthy', only(v0, v1, v2));
  await monitorOf(node, ferryd);

  // The switch port goes down: the PF loses its carrier.
  const port = ports.get(pf.netdev) as string;
  await latencyMs(kubelet, `${pf.netdev} carrier down: its VFs Unhealthy`, only(v2), () =>
    inNetns(sriov.wire, 'ip', 'link', 'set', port, 'down'),
  );
  // Only the carrier went: the VFs' netdevs are on the node as they were. The carrier is LOWER_UP, which
  // the kernel clears at once; iproute2's NO-CARRIER follows the operstate, which linkwatch updates later
  // (under load the kubelet heard of the change before it).
  const pfFlags = (await link(node, pf.netdev))?.flags;
  expect(pfFlags).toContain('UP');
  expect(pfFlags).not.toContain('LOWER_UP');
  expect((await link(node, 'vf0'))?.address).toBe(vfs[0]?.mac);
  expect((await link(node, 'vf1'))?.address).toBe(vfs[1]?.mac);
  const r = await ferryd.request('GET', '/v1/operator/devices');
  const listed = (r.json as { devices: { id: string; state: string; pfWithoutCarrier?: string }[] }).devices;
  expect(listed.map((d) => [d.id, d.state, d.pfWithoutCarrier])).toEqual([
    [v0, 'free', 'pf0'],
    [v1, 'free', 'pf0'],
    [v2, 'free', undefined],
  ]);

  await latencyMs(kubelet, `${pf.netdev} carrier back: its VFs Healthy`, only(v0, v1, v2), () =>
    inNetns(sriov.wire, 'ip', 'link', 'set', port, 'up'),
  );
});

test('the link monitor killed is started again and still turns health within a second', async (t) => {
  const kubelet = await useStandInKubelet(t);
  const { node, ferryd } = await useServedNode(t, kubelet);
  const first = await monitorOf(node, ferryd);

  process.kill(first, 'SIGKILL');
  const second = await monitorOf(node, ferryd, first);
  expect(second).not.toBe(first);
  await logged(ferryd, 'link monitor exited');
  await latencyMs(kubelet, `${D1} removed: Unhealthy`, healthy(D2), () => delLink(node, 'eth1'));
});

test('ferryd gone leaves no link monitor: stopped (SIGTERM), and killed (SIGKILL: the kernel ends it)', async (t) => {
  const { node, ferryd } = await useNodeWithDevices(t, DEVICES, { reconcile: { intervalSec: 60 } });
  await monitorOf(node, ferryd);
  await ferryd.stop();
  expect(linkMonitorsIn(node)).toEqual([]);
  // And ferryd itself went the whole way: its shutdown finished (database closed), not cut short by a
  // signal handler of the monitor's process library.
  expect(ferryd.exitCode).toBe(0);
  expect(ferryd.log()).toContain('"msg":"ferryd stopped"');

  await ferryd.start();
  await monitorOf(node, ferryd);
  await ferryd.kill('SIGKILL');
  // No link changes here: a monitor left over would only notice its closed pipe at its next event.
  await waitFor('no link monitor left', async () => linkMonitorsIn(node).length === 0, WAIT_MS);
});
