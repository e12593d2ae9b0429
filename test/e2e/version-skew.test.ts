/**
 * The version-skew rule between the real ferry-cni and the real ferryd (shared-types api/version.ts,
 * docs/architecture.md "Version skew"): ferryd must be of ferry-cni's API version or one newer. The
 * builds of this checkout both speak API 1. Skewed pairs are real builds of this checkout speaking another
 * API version (fixtures/skewed-build.ts: a ferry-cni or a ferryd of API 2, the next release), or a proxy
 * on the socket that restates one side's version (the pairs no real rollout makes). Out of the rule is
 * code 117 naming both versions: from ferryd, before it reads the request; from the shim, before it uses
 * the answer; between two ferryds, the hand-over refuses (105).
 */
import { expect, test } from 'vitest';
import { netConf, newContainerId } from '../fixtures/conf';
import { launchBeside } from '../fixtures/ferryd';
import { useFerrydProxy } from '../fixtures/ferryd-proxy';
import { linkNames } from '../fixtures/kernel';
import { useNetns } from '../fixtures/netns';
import { useNode } from '../fixtures/node';
import { pendingFiles } from '../fixtures/queue';
import { runShim } from '../fixtures/shim';
import { ferrydOfApi, shimOfApi } from '../fixtures/skewed-build';
import { waitFor } from '../fixtures/wait';

test.for([
  ['of one build (both API 1)', undefined],
  ['of ferryd one API version newer (API 2)', '2'],
] as const)('in the rule, a pair %s: ADD → CHECK → DEL work', async ([, ferrydApi], t) => {
  const { node, ferryd } = await useNode(t);
  const pod = await useNetns(t, 'pod');
  const proxy = await useFerrydProxy(t, ferryd.socket, ferrydApi ? { ferrydApi } : {});
  const conf = { ...netConf(ferryd), daemonSocket: proxy.socket };
  const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf };
  const add = await runShim(node, 'ADD', call);
  expect(add.exitCode, add.stdout).toBe(0);
  const check = await runShim(node, 'CHECK', { ...call, conf: { ...conf, prevResult: add.json } });
  expect(check.exitCode, check.stdout).toBe(0);
  expect((await runShim(node, 'DEL', call)).exitCode).toBe(0);
  expect(await ferryd.assignedAddresses()).toEqual([]);
  // Both sides stated their version on every exchange.
  expect(proxy.exchanges.map((e) => [e.method, e.status, e.shimApi, e.ferrydApi])).toEqual([
    ['POST', 200, '1', '1'],
    ['GET', 200, '1', '1'],
    ['DELETE', 200, '1', '1'],
  ]);
});

test('ferry-cni newer than ferryd: ferryd refuses ADD and DEL with 117 before it reads them; nothing is kept or queued', async (t) => {
  const { node, ferryd } = await useNode(t);
  const pod = await useNetns(t, 'pod');
  const proxy = await useFerrydProxy(t, ferryd.socket, { shimApi: '2' });
  const conf = { ...netConf(ferryd), daemonSocket: proxy.socket, deleteQueue: ferryd.deleteQueue };
  const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf };
  const refusal = {
    cniVersion: '1.1.0',
    code: 117,
    msg: "ferry-cni speaks API 2, ferryd API 1: ferryd is older than ferry-cni; finish rolling out the ferryd DaemonSet (each of its pods installs the ferry-cni of its own release), or install the ferry-cni of ferryd's release",
  };
  const add = await runShim(node, 'ADD', call);
  expect(add.exitCode).toBe(1);
  expect(add.json).toEqual(refusal);
  expect(await ferryd.assignedAddresses()).toEqual([]);
  // The pair made while ferryd was asked went with the rollback.
  expect(await linkNames(pod)).toEqual(['lo']);
  expect(await linkNames(node)).toEqual(['lo']);
  const del = await runShim(node, 'DEL', call);
  expect(del.exitCode).toBe(1);
  expect(del.json).toEqual(refusal);
  expect(pendingFiles(ferryd.deleteQueue)).toEqual([]);
  expect(proxy.exchanges.map((e) => [e.method, e.status])).toEqual([
    ['POST', 400],
    ['DELETE', 400],
  ]);
});

test.for([
  [
    'more than one API version newer (API 3)',
    '3',
    "ferry-cni speaks API 1, ferryd API 3: ferry-cni is more than one API version older than ferryd; install the ferry-cni of ferryd's release (ferryctl install --shim, as the ferryd container's postStart hook does)",
  ],
  [
    'that states no version',
    null,
    "ferry-cni speaks API 1, ferryd API (none stated): whatever answers or asks on ferryd's socket is not a ferry-cni or ferryd of a Ferry release; install ferry-cni and ferryd from one release",
  ],
] as const)('a ferryd %s: the shim refuses its answer with 117', async ([, ferrydApi, why], t) => {
  const { node, ferryd } = await useNode(t);
  const pod = await useNetns(t, 'pod');
  const containerId = newContainerId();
  const proxy = await useFerrydProxy(t, ferryd.socket, { ferrydApi });
  const conf = { ...netConf(ferryd), daemonSocket: proxy.socket, prevResult: { cniVersion: '1.1.0' } };
  const check = await runShim(node, 'CHECK', { containerId, ifName: 'eth0', netns: pod, conf });
  expect(check.exitCode).toBe(1);
  expect(check.json).toEqual({
    cniVersion: '1.1.0',
    code: 117,
    msg: `ferryd GET /v1/endpoints/${containerId}: ${why}`,
  });
});

const NEWER_SHIM_REFUSED =
  "ferry-cni speaks API 2, ferryd API 1: ferryd is older than ferry-cni; finish rolling out the ferryd DaemonSet (each of its pods installs the ferry-cni of its own release), or install the ferry-cni of ferryd's release";

test('a real ferry-cni of the next API version (2) against this ferryd (1): ferryd refuses its ADD and DEL with 117, nothing kept or queued', async (t) => {
  const [{ node, ferryd }, newer] = await Promise.all([useNode(t), shimOfApi(t, 2)]);
  const pod = await useNetns(t, 'pod');
  const conf = { ...netConf(ferryd), deleteQueue: ferryd.deleteQueue };
  const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf, cniPath: [newer] };
  // Both sides apply the rule: ferryd refuses the request before it reads it (nothing is allocated), and
  // the shim, checking ferryd's answer first, names the request.
  const add = await runShim(node, 'ADD', call);
  expect(add.exitCode).toBe(1);
  expect(add.json).toEqual({
    cniVersion: '1.1.0',
    code: 117,
    msg: `ferryd POST /v1/allocations: ${NEWER_SHIM_REFUSED}`,
  });
  expect(await ferryd.assignedAddresses()).toEqual([]);
  expect(await linkNames(pod)).toEqual(['lo']);
  const del = await runShim(node, 'DEL', call);
  expect(del.exitCode).toBe(1);
  expect(del.json).toMatchObject({
    code: 117,
    msg: expect.stringMatching(/^ferryd DELETE \/v1\/endpoints\/.*: ferry-cni speaks API 2, ferryd API 1: /),
  });
  expect(pendingFiles(ferryd.deleteQueue)).toEqual([]);
  // This checkout's own ferry-cni, the same call: served.
  const own = await runShim(node, 'ADD', { ...call, cniPath: undefined });
  expect(own.exitCode, own.stdout).toBe(0);
});

test("a rollout to a real ferryd of the next API version (2): it takes over and serves the node's ferry-cni (1); rolling back to API 1 is refused by the hand-over, and ferryd 2 keeps serving", async (t) => {
  const [{ node, ferryd }, next] = await Promise.all([useNode(t), ferrydOfApi(t, 2)]);
  const pod = await useNetns(t, 'pod');
  const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf: netConf(ferryd) };
  const add = await runShim(node, 'ADD', call);
  expect(add.exitCode, add.stdout).toBe(0);
  // The surge pod of the new release, beside the old one; then the DaemonSet deletes the old pod.
  const newer = launchBeside(t, ferryd, node, { bin: next });
  await waitFor('ferryd 2 ready', async () => newer.log().includes('"msg":"ferryd ready"'), 30_000);
  await ferryd.stop();
  expect((await ferryd.request('GET', '/readyz')).headers['ferry-api']).toBe('2');
  // ferry-cni 1, served by ferryd 2: the pod added under ferryd 1 checks and deletes, a new one adds.
  const check = await runShim(node, 'CHECK', { ...call, conf: { ...call.conf, prevResult: add.json } });
  expect(check.exitCode, check.stdout).toBe(0);
  expect((await runShim(node, 'DEL', call)).exitCode).toBe(0);
  const again = { ...call, containerId: newContainerId() };
  expect((await runShim(node, 'ADD', again)).exitCode).toBe(0);
  // A rollback to this checkout's ferryd (API 1) beside ferryd 2: refused, it exits; ferryd 2 serves on.
  const older = launchBeside(t, ferryd, node);
  // Bounded: a rollback wrongly taken over keeps running, and the test says so instead of timing out.
  const running = new Promise<'still running'>((r) => setTimeout(() => r('still running'), 30_000).unref());
  const exit = await Promise.race([older.exited, running]);
  expect(exit, `the rollback ferryd (API 1) after 30 s:\n${older.log().slice(-1500)}`).not.toBe('still running');
  expect(exit).not.toBe(0);
  expect(older.log()).toContain('ferry-cni speaks API 2, ferryd API 1: ferryd is older than ferry-cni');
  expect((await ferryd.request('GET', '/readyz')).headers['ferry-api']).toBe('2');
  expect((await runShim(node, 'DEL', again)).exitCode).toBe(0);
  expect(await ferryd.assignedAddresses()).toEqual([]);
  await newer.stop();
});
