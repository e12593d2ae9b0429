/**
 * ferryd drains the delete queue before it serves (docs/architecture.md "DEL (ferryd down)", the runbook's "ferryd
 * crashed"). The reconciler's period is an hour here, so nothing but the start-up drain can apply a
 * queued DEL by the time ferryd first says ready; and the queue's lock protocol is what keeps a DEL
 * written during that start-up from being missed.
 */
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { netConf, newContainerId } from '../fixtures/conf';
import { useNodeWithDevices } from '../fixtures/device';
import type { Ferryd } from '../fixtures/ferryd';
import { linkNames } from '../fixtures/kernel';
import { useNetns } from '../fixtures/netns';
import { useNode } from '../fixtures/node';
import { pidsWithOpen } from '../fixtures/proc';
import { pendingFiles, queueReport, writeQueueEntry } from '../fixtures/queue';
import { runShim } from '../fixtures/shim';

const AN_HOUR = { reconcile: { intervalSec: 3600, staleGraceSec: 3600 } };

async function until(what: string, cond: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

const appliedCount = (log: string) => log.split('\n').filter((l) => l.includes('"msg":"queued DEL applied"')).length;

async function endpointIds(ferryd: Ferryd): Promise<string[]> {
  return (
    (await ferryd.request('GET', '/v1/operator/endpoints')).json as { endpoints: { containerId: string }[] }
  ).endpoints.map((e) => e.containerId);
}

test('the DELs queued while ferryd was down are applied by its first ready answer', async (t) => {
  const devices = [{ name: 'eth1', mac: '02:fe:00:00:dd:01' }];
  const { node, ferryd } = await useNodeWithDevices(t, devices, AN_HOUR);
  const conf = netConf(ferryd, { daemonTimeouts: { delWaitMs: 200 } });
  const calls = [
    { containerId: newContainerId(), ifName: 'eth0', netns: await useNetns(t, 'pod'), conf },
    {
      containerId: newContainerId(),
      ifName: 'eth0',
      netns: await useNetns(t, 'pod'),
      conf: { ...conf, delegatedNICs: { group: 'frontend', count: 1 } },
    },
  ];
  for (const c of calls) expect((await runShim(node, 'ADD', c)).exitCode).toBe(0);
  await ferryd.kill('SIGKILL');
  for (const c of calls) expect((await runShim(node, 'DEL', c)).exitCode).toBe(0);
  expect(pendingFiles(ferryd.deleteQueue)).toHaveLength(2);
  expect(await linkNames(node)).toContain('eth1');

  // start() returns at the first 200 from /readyz; every check below reads what ferryd had done by then
  // (with the reconciler an hour away and no new file in the queue, nothing else can run meanwhile).
  await ferryd.start();
  expect(pendingFiles(ferryd.deleteQueue)).toEqual([]);
  expect(await queueReport(ferryd)).toMatchObject({ pending: [], failed: [] });
  expect(await endpointIds(ferryd)).toEqual([]);
  expect(await ferryd.assignedAddresses()).toEqual([]);
  const devs = (await ferryd.request('GET', '/v1/operator/devices')).json as { devices: { state: string }[] };
  expect(devs.devices.map((d) => d.state)).toEqual(['free']);
  expect(appliedCount(ferryd.log())).toBe(2);
});

test('a DEL that reaches the queue while ferryd is draining at start-up is applied, not missed', async (t) => {
  const { node, ferryd } = await useNode(t, {
    ...AN_HOUR,
    networks: [{ name: 'ferry', ipv4: { subnet: '10.244.0.0/21' } }],
  });
  // A long queue keeps ferryd inside its start-up drain (about half a second here) long enough for the
  // test to see it there and freeze it.
  const backlog = Array.from({ length: 1000 }, (_, i) => ({ containerId: `backlog${i}`, ifName: 'eth0' }));
  for (let i = 0; i < backlog.length; i += 100) {
    const answers = await Promise.all(
      backlog
        .slice(i, i + 100)
        .map((a) => ferryd.request('POST', '/v1/allocations', { network: 'ferry', ...a, netns: '/proc/self/ns/net' })),
    );
    expect(answers.filter((r) => r.status !== 200).map((r) => r.body)).toEqual([]);
  }
  const pod = await useNetns(t, 'pod');
  const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf: netConf(ferryd) };
  expect((await runShim(node, 'ADD', call)).exitCode).toBe(0);
  await ferryd.kill('SIGKILL');
  for (const a of backlog) writeQueueEntry(ferryd.deleteQueue, a);

  // 1. ferryd starts and applies the first queued DEL: it is inside its start-up drain. Freeze it there.
  const logBefore = ferryd.log().length;
  const startLog = () => ferryd.log().slice(logBefore);
  ferryd.launch();
  await until('ferryd to apply the first queued DEL', () => appliedCount(startLog()) > 0);
  await ferryd.kill('SIGSTOP');
  expect(startLog(), 'ferryd was frozen only after it was ready').not.toContain('"msg":"ferryd ready"');

  // 2. The pod is deleted now. The DEL cannot reach ferryd and turns to the queue: it gets as far as
  //    opening the queue's lock (or, were there no lock protocol, writes its entry and exits).
  //    Its timeouts are short so that it turns to the queue while ferryd is still frozen.
  let delDone = false;
  const del = runShim(node, 'DEL', {
    ...call,
    conf: netConf(ferryd, { daemonTimeouts: { delWaitMs: 200, requestMs: 300 } }),
  }).finally(() => {
    delDone = true;
  });
  const lock = join(ferryd.deleteQueue, 'lock');
  await until('the DEL to reach the queue lock', () => delDone || pidsWithOpen(lock).some((p) => p !== ferryd.pid));

  // 3. ferryd goes on. The DEL must be applied, whichever way it went, by the time both are done.
  await ferryd.resume();
  const r = await del;
  expect(r.exitCode, r.stdout).toBe(0);
  expect(await linkNames(pod)).toEqual(['lo']);
  expect(await endpointIds(ferryd)).toEqual([]);
  expect(await ferryd.assignedAddresses()).toEqual([]);
  expect(pendingFiles(ferryd.deleteQueue)).toEqual([]);
  expect(await queueReport(ferryd)).toMatchObject({ pending: [], failed: [] });
});
