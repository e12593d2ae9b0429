/**
 * ferryd down (killed, or frozen with SIGSTOP) while pods are deleted: every DEL exits 0 and is queued,
 * every delegated device is back on the node, and when ferryd returns every queued DEL is applied
 * exactly once and nothing is left. The reconciler's period is an hour: a restarted ferryd has applied
 * the queue by its first ready answer (the start-up drain), a resumed one as the files' events arrive
 * (its watch). startup-drain.test.ts races a DEL against that start-up. A ferryd that is not running at
 * all (socket refused or absent) is not waited for: the DEL queues at once.
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { netConf, newContainerId } from '../fixtures/conf';
import { type TestDevice, useNodeWithDevices } from '../fixtures/device';
import type { Ferryd } from '../fixtures/ferryd';
import { linkNames, links } from '../fixtures/kernel';
import { type TestNetns, useNetns } from '../fixtures/netns';
import { useNode } from '../fixtures/node';
import { queueEntryName as entryName, pendingFiles } from '../fixtures/queue';
import type { Scope } from '../fixtures/scope';
import { runShim, type ShimCall } from '../fixtures/shim';

const PODS = 110;
const DEL_WAIT_MS = 1500;

const deviceOf = (i: number): TestDevice => ({
  name: `dev${i}`,
  mac: `02:fe:00:00:${(i >> 8).toString(16).padStart(2, '0')}:${(i & 0xff).toString(16).padStart(2, '0')}`,
});

async function useBusyNode(t: Scope, pods: number) {
  const devices = Array.from({ length: pods }, (_, i) => deviceOf(i));
  const { node, ferryd } = await useNodeWithDevices(t, devices, {
    logLevel: 'info',
    reconcile: { intervalSec: 3600, staleGraceSec: 3600 },
  });
  const netnses = await Promise.all(Array.from({ length: pods }, () => useNetns(t, 'pod')));
  const calls: ShimCall[] = netnses.map((pod) => ({
    containerId: newContainerId(),
    ifName: 'eth0',
    netns: pod,
    conf: netConf(ferryd, {
      logLevel: 'info',
      delegatedNICs: { group: 'frontend', count: 1 },
      deleteQueue: ferryd.deleteQueue,
      daemonTimeouts: { delWaitMs: DEL_WAIT_MS, requestMs: 60_000, addWaitMs: 10_000 },
    }),
  }));
  const adds = await Promise.all(calls.map((c) => runShim(node, 'ADD', c)));
  expect(adds.filter((r) => r.exitCode !== 0).map((r) => r.stdout)).toEqual([]);
  return { node, ferryd, devices, calls, pods: netnses };
}

async function expectDevicesHome(node: TestNetns, devices: TestDevice[]): Promise<void> {
  const byMac = new Map((await links(node)).map((l) => [l.address, l.ifname]));
  const wrong = devices
    .filter((d) => byMac.get(d.mac) !== d.name)
    .map((d) => `${d.mac}→${byMac.get(d.mac) ?? 'absent'}`);
  expect(wrong).toEqual([]);
}

async function releaseState(ferryd: Ferryd): Promise<string> {
  const eps = (await ferryd.request('GET', '/v1/operator/endpoints')).json as { endpoints: unknown[] };
  const queue = (await ferryd.request('GET', '/v1/operator/queue')).json as { pending: unknown[]; failed: unknown[] };
  const devs = (await ferryd.request('GET', '/v1/operator/devices')).json as { devices: { state: string }[] };
  return `${eps.endpoints.length} endpoints, ${queue.pending.length} pending, ${queue.failed.length} failed, ${devs.devices.filter((d) => d.state !== 'free').length} devices not free`;
}

const ALL_RELEASED = '0 endpoints, 0 pending, 0 failed, 0 devices not free';

async function expectAllReleasedWithin(ferryd: Ferryd, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  let state = await releaseState(ferryd);
  while (state !== ALL_RELEASED && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    state = await releaseState(ferryd);
  }
  expect(state).toBe(ALL_RELEASED);
}

describe.for(['killed', 'frozen'] as const)(
  '%d pods, ferryd %s during their DELs'.replace('%d', String(PODS)),
  (how) => {
    test('every DEL exits 0 and is queued, devices come home, the queue is applied exactly once', async (t) => {
      const { node, ferryd, devices, calls, pods } = await useBusyNode(t, PODS);
      if (how === 'killed') await ferryd.kill('SIGKILL');
      else await ferryd.kill('SIGSTOP');

      const dels = await Promise.all(calls.map((c) => runShim(node, 'DEL', c)));
      expect(dels.filter((r) => r.exitCode !== 0).map((r) => r.stdout)).toEqual([]);
      await expectDevicesHome(node, devices);
      for (const pod of pods) expect(await linkNames(pod)).toEqual(['lo']);
      expect((await linkNames(node)).filter((n) => n.startsWith('fry'))).toEqual([]);
      expect(pendingFiles(ferryd.deleteQueue)).toHaveLength(PODS);

      if (how === 'killed') {
        // At its first ready answer (start() returns then), with the next reconcile an hour away.
        await ferryd.start();
        expect(await releaseState(ferryd)).toBe(ALL_RELEASED);
      } else {
        await ferryd.resume();
        await expectAllReleasedWithin(ferryd, 10_000);
      }
      expect(pendingFiles(ferryd.deleteQueue)).toEqual([]);
      const applied = ferryd
        .log()
        .split('\n')
        .filter((l) => l.includes('"msg":"queued DEL applied"'));
      expect(applied).toHaveLength(PODS);
      // Every address released: none assigned, each pod's two cooling down (the pass that ends cooldowns
      // is the reconciler's, an hour away).
      const pools = (await ferryd.request('GET', '/v1/operator/pools')).json as {
        pools: { assigned: number; pendingRelease: number }[];
      };
      expect(pools.pools.map((p) => [p.assigned, p.pendingRelease])).toEqual([
        [0, PODS],
        [0, PODS],
      ]);
      await expectDevicesHome(node, devices);
    });
  },
);
describe.for([
  ['refused', 'ECONNREFUSED'],
  ['absent', 'ENOENT'],
] as const)('ferryd not running, its socket %s', ([how, errno]) => {
  test('DEL queues at once without asking again, cleans the netns, exits 0; ferryd applies it later', async (t) => {
    const { node, ferryd } = await useNode(t);
    const pod = await useNetns(t, 'pod');
    // A long delWaitMs: a DEL that waited or asked again would show it in its log.
    const conf = netConf(ferryd, { deleteQueue: ferryd.deleteQueue, daemonTimeouts: { delWaitMs: 10_000 } });
    const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf };
    expect((await runShim(node, 'ADD', call)).exitCode).toBe(0);
    await ferryd.kill('SIGKILL');
    // SIGKILL leaves the socket file behind: connect() is refused. Without it, connect() finds nothing.
    if (how === 'absent') rmSync(ferryd.socket);

    const del = await runShim(node, 'DEL', call);
    expect(del.exitCode, del.stdout).toBe(0);
    expect(del.stdout).toBe('');
    expect(pendingFiles(ferryd.deleteQueue)).toEqual([entryName('ferry', call.containerId, 'eth0')]);
    expect(await linkNames(pod)).toEqual(['lo']);
    expect(await linkNames(node)).toEqual(['lo']);

    const lines = readFileSync(join(ferryd.dir, 'cni.log'), 'utf8')
      .split('\n')
      .filter((l) => l.includes(call.containerId) && l.includes('"cmd":"DEL"'))
      .map((l) => JSON.parse(l) as { msg: string; cause?: string });
    const msgs = lines.map((l) => l.msg);
    expect(msgs).not.toContain('ferryd unreachable; trying again');
    const gaveUp = lines.filter((l) => l.msg === 'ferryd is not running: queueing the DEL without waiting');
    expect(gaveUp).toHaveLength(1);
    expect(gaveUp[0]?.cause).toContain(errno);
    expect(msgs).toContain('DEL queued for ferryd to apply');
    // One request for the endpoint, none repeated (the look at /readyz under the queue lock logs nothing).
    expect(msgs.filter((m) => m === 'asking ferryd')).toHaveLength(1);

    await ferryd.start();
    expect(pendingFiles(ferryd.deleteQueue)).toEqual([]);
    expect(await ferryd.assignedAddresses()).toEqual([]);
    expect((await ferryd.request('GET', `/v1/endpoints/${call.containerId}`)).status).toBe(404);
  });
});
