/**
 * The delete queue's edges: a late queued DEL never removes a re-ADDed endpoint; hostile or broken
 * files are set aside, never executed, never escape the folder; a device whose marker was overwritten
 * still goes home; endpoints whose netns vanished are released without any DEL.
 */
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { netConf, newContainerId } from '../fixtures/conf';
import { useNodeWithDevices } from '../fixtures/device';
import { FAST_PASSES } from '../fixtures/ferryd';
import { addMacvlan, linkNames, links } from '../fixtures/kernel';
import { inNetns, removeNetns, useNetns } from '../fixtures/netns';
import { useNode } from '../fixtures/node';
import { queueEntryName } from '../fixtures/queue';
import { runShim } from '../fixtures/shim';
import { waitFor } from '../fixtures/wait';

test('a queued DEL applied after a re-ADD of the same container and ifName leaves the new endpoint alone', async (t) => {
  const { node, ferryd } = await useNode(t);
  const pod = await useNetns(t, 'pod');
  const conf = netConf(ferryd, { deleteQueue: ferryd.deleteQueue, daemonTimeouts: { delWaitMs: 300 } });
  const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf };
  expect((await runShim(node, 'ADD', call)).exitCode).toBe(0);
  await ferryd.kill('SIGKILL');
  expect((await runShim(node, 'DEL', call)).exitCode).toBe(0);
  const name = queueEntryName('ferry', call.containerId, 'eth0');
  const saved = join(ferryd.dir, 'saved-entry.json');
  copyFileSync(join(ferryd.deleteQueue, name), saved);
  await ferryd.start();
  await waitFor(
    'the queued DEL',
    async () => (await ferryd.request('GET', `/v1/endpoints/${call.containerId}`)).status === 404,
  );

  // Same container, same ifName, added again; then the old entry shows up again (a late duplicate).
  expect((await runShim(node, 'ADD', call)).exitCode).toBe(0);
  // Put it back the way the shim writes: whole, by rename (ferryd may look the moment it appears).
  copyFileSync(saved, join(ferryd.deleteQueue, '.tmp-copy'));
  renameSync(join(ferryd.deleteQueue, '.tmp-copy'), join(ferryd.deleteQueue, name));
  await waitFor('the entry to be consumed', async () => !existsSync(join(ferryd.deleteQueue, name)));
  expect((await ferryd.request('GET', `/v1/endpoints/${call.containerId}`)).status).toBe(200);
  // ferryd logs after the change the test saw (the file gone, the endpoint released).
  await waitFor('the log line', async () =>
    ferryd.log().includes('queued DEL skipped: the endpoint was added again after it was queued'),
  );
});

test('hostile and broken queue files are set aside, never executed, never followed out of the folder', async (t) => {
  const { node, ferryd } = await useNode(t);
  const pod = await useNetns(t, 'pod');
  const victim = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf: netConf(ferryd) };
  expect((await runShim(node, 'ADD', victim)).exitCode).toBe(0);
  const q = ferryd.deleteQueue;
  const outside = join(ferryd.dir, 'outside.txt');
  writeFileSync(outside, 'must stay');
  const hostile = {
    'not-ours.json': '{}',
    '.hidden': 'x',
    'x;rm -rf --no-preserve-root.json': '{}',
    [queueEntryName('a', 'b', 'c')]: 'this is not JSON',
    [queueEntryName('d', 'e', 'f')]: JSON.stringify({
      version: 1,
      network: 'ferry',
      containerId: '../../etc',
      ifName: 'eth0',
      netns: '',
      queuedAt: new Date().toISOString(),
    }),
    [queueEntryName('g', 'h', 'i')]: JSON.stringify({ version: 1, network: 'ferry', containerId: victim.containerId }),
  };
  for (const [name, content] of Object.entries(hostile)) writeFileSync(join(q, name), content);
  symlinkSync(outside, join(q, queueEntryName('j', 'k', 'l')));
  mkdirSync(join(q, queueEntryName('m', 'n', 'o')));
  const expected = Object.keys(hostile).length + 2;

  await waitFor(
    'every file set aside',
    async () => readdirSync(q).filter((f) => f !== 'lock' && f !== 'failed').length === 0,
  );
  const status = (await ferryd.request('GET', '/v1/operator/queue')).json as {
    pending: unknown[];
    failed: { originalName: string; reason: string }[];
  };
  expect(status.pending).toEqual([]);
  expect(status.failed).toHaveLength(expected);
  const reasons = Object.fromEntries(status.failed.map((f) => [f.originalName, f.reason]));
  expect(reasons['not-ours.json']).toBe('unexpected file name: not written by ferry-cni');
  expect(reasons[queueEntryName('a', 'b', 'c')]).toMatch(/^not JSON: /);
  expect(reasons[queueEntryName('d', 'e', 'f')]).toMatch(/^invalid entry: containerId: must match/);
  expect(reasons[queueEntryName('g', 'h', 'i')]).toMatch(/^invalid entry: /);
  expect(reasons[queueEntryName('j', 'k', 'l')]).toBe('not a regular file');
  expect(readFileSync(outside, 'utf8')).toBe('must stay');
  expect(readdirSync(join(q, 'failed')).every((f) => /^[0-9a-f]{64}(\.reason\.json)?$/.test(f))).toBe(true);
  // Nothing was executed: the victim's endpoint is untouched.
  expect((await ferryd.request('GET', `/v1/endpoints/${victim.containerId}`)).status).toBe(200);
});

test("without ferryd Ferry's devices go home, one whose alias the pod overwrote too; anything else stays", async (t) => {
  const macs = ['02:fe:00:00:aa:01', '02:fe:00:00:aa:02'];
  const { node, ferryd } = await useNodeWithDevices(
    t,
    macs.map((mac, k) => ({ name: `eth${5 + k}`, mac })),
  );
  const pod = await useNetns(t, 'pod');
  // Another plugin's device in the same pod.
  await inNetns(node, 'ip', 'link', 'add', 'parent0', 'type', 'veth', 'peer', 'name', 'parent1');
  await addMacvlan(node, 'parent0', 'other0');
  await inNetns(node, 'ip', 'link', 'set', 'other0', 'netns', pod.name);
  const conf = netConf(ferryd, {
    delegatedNICs: { group: 'frontend', count: 2 },
    deleteQueue: ferryd.deleteQueue,
    daemonTimeouts: { delWaitMs: 300 },
  });
  const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf };
  expect((await runShim(node, 'ADD', call)).exitCode).toBe(0);
  // The app overwrote one device's alias, and with it the host name the marker carried.
  await inNetns(pod, 'ip', 'link', 'set', 'net2', 'alias', 'the app was here');
  await ferryd.kill('SIGKILL');

  const del = await runShim(node, 'DEL', call);
  expect(del.exitCode, del.stdout).toBe(0);
  const home = async () => new Map((await links(node)).map((l) => [l.address, l.ifname]));
  expect((await home()).get(macs[0])).toBe('eth5');
  expect((await home()).get(macs[1])).toBe('frt02fe0000aa02');
  expect(await linkNames(pod)).toEqual(['lo', 'other0']);

  // ferryd applies the queued DEL and renames the travelled device by its MAC.
  await ferryd.start();
  await waitFor('the device renamed home', async () => (await home()).get(macs[1]) === 'eth6');
  const devs = (await ferryd.request('GET', '/v1/operator/devices')).json as { devices: { state: string }[] };
  expect(devs.devices.map((d) => d.state)).toEqual(['free', 'free']);
  expect(await ferryd.assignedAddresses()).toEqual([]);
  const marks = (await links(node)).filter((l) => macs.includes(l.address ?? ''));
  expect(marks.map((l) => l.ifalias ?? '')).toEqual(['', '']);
});

test('an endpoint whose netns vanished without any DEL is released after the grace period', async (t) => {
  const { node, ferryd } = await useNode(t, { reconcile: { ...FAST_PASSES.reconcile, staleGraceSec: 1 } });
  const pod = await useNetns(t, 'pod');
  const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf: netConf(ferryd) };
  expect((await runShim(node, 'ADD', call)).exitCode).toBe(0);
  await removeNetns(pod.name);
  await waitFor(
    'the stale endpoint released',
    async () => (await ferryd.request('GET', `/v1/endpoints/${call.containerId}`)).status === 404,
  );
  // ferryd logs after the change the test saw (the file gone, the endpoint released).
  await waitFor('the log line', async () =>
    ferryd.log().includes('its netns has been gone longer than the grace period'),
  );
  expect(await ferryd.assignedAddresses()).toEqual([]);
});
