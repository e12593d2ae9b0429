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
import type { Ferryd } from '../fixtures/ferryd';
import { type KubeletDevice, type StandInKubelet, useStandInKubelet } from '../fixtures/kubelet-plugins';
import { isSubscribed, linkMonitorsIn, parentOf } from '../fixtures/link-monitors';
import { inNetns, type TestNetns } from '../fixtures/netns';
import type { Scope } from '../fixtures/scope';
import { waitFor } from '../fixtures/wait';

const RESOURCE = 'ferry.dev/frontend';
const DEVICES: TestDevice[] = [
  { name: 'eth1', mac: '02:fe:00:00:01:01' },
  { name: 'eth2', mac: '02:fe:00:00:01:02' },
];
const [D1, D2] = DEVICES.map((d) => d.mac) as [string, string];
/** Far past the 1 s promised, far short of the 60 s scan. */
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

/** Runs `change` and resolves with how long after its start the first list `cond` accepts reached the kubelet. */
async function latencyMs(
  kubelet: StandInKubelet,
  what: string,
  cond: (devices: KubeletDevice[]) => boolean,
  change: () => Promise<unknown>,
): Promise<number> {
  const startMs = performance.now();
  await change();
  await kubelet.waitForDevices(RESOURCE, what, cond, WAIT_MS);
  const plugin = kubelet.plugin(RESOURCE);
  const i = plugin?.lists.findIndex((l, n) => (plugin.receivedAtMs[n] ?? 0) >= startMs && cond(l)) ?? -1;
  const ms = (plugin?.receivedAtMs[i] ?? Number.NaN) - startMs;
  console.log(`device health: ${what} reached the kubelet ${ms.toFixed(1)} ms after the change began`);
  return ms;
}

const delLink = (node: TestNetns, name: string) => inNetns(node, 'ip', 'link', 'del', name);
const addDevice = async (node: TestNetns, wire: TestNetns, d: TestDevice, peer: string) => {
  await inNetns(
    node,
    'ip',
    'link',
    'add',
    d.name,
    'address',
    d.mac,
    'type',
    'veth',
    'peer',
    'name',
    peer,
    'netns',
    wire.path,
  );
  await inNetns(node, 'ip', 'link', 'set', d.name, 'up');
};

test('a device removed from the node is Unhealthy at the kubelet within a second, Healthy again within a second of coming back', async (t) => {
  const kubelet = await useStandInKubelet(t);
  const { node, ferryd, wire } = await useServedNode(t, kubelet);
  await monitorOf(node, ferryd);

  const removed = await latencyMs(kubelet, `${D2} removed: Unhealthy`, healthy(D1), () => delLink(node, 'eth2'));
  expect(removed).toBeLessThan(1000);
  const [, d2] = DEVICES as [TestDevice, TestDevice];
  const back = await latencyMs(kubelet, `${D2} back: Healthy`, healthy(D1, D2), () => addDevice(node, wire, d2, 'w9'));
  expect(back).toBeLessThan(1000);
  // The operator's view turned with it (the inventory, not only the plugin's list).
  const r = await ferryd.request('GET', '/v1/operator/devices');
  expect((r.json as { devices: { mac: string; state: string }[] }).devices.map((d) => [d.mac, d.state])).toEqual([
    [D1, 'free'],
    [D2, 'free'],
  ]);
});

test('the link monitor killed is started again and still turns health within a second', async (t) => {
  const kubelet = await useStandInKubelet(t);
  const { node, ferryd } = await useServedNode(t, kubelet);
  const first = await monitorOf(node, ferryd);

  process.kill(first, 'SIGKILL');
  const second = await monitorOf(node, ferryd, first);
  expect(second).not.toBe(first);
  expect(ferryd.log()).toContain('link monitor exited');
  const removed = await latencyMs(kubelet, `${D1} removed: Unhealthy`, healthy(D2), () => delLink(node, 'eth1'));
  expect(removed).toBeLessThan(1000);
});

test('ferryd gone leaves no link monitor: stopped (SIGTERM), and killed (SIGKILL: the kernel ends it)', async (t) => {
  const { node, ferryd } = await useNodeWithDevices(t, DEVICES, { reconcile: { intervalSec: 60 } });
  await monitorOf(node, ferryd);
  await ferryd.stop();
  expect(linkMonitorsIn(node)).toEqual([]);

  await ferryd.start();
  await monitorOf(node, ferryd);
  await ferryd.kill('SIGKILL');
  // No link changes here: a monitor left over would only notice its closed pipe at its next event.
  await waitFor('no link monitor left', async () => linkMonitorsIn(node).length === 0, WAIT_MS);
});
