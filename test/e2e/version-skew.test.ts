/**
 * The version-skew rule between the real ferry-cni and the real ferryd (shared-types api/version.ts,
 * docs/architecture.md "Version skew"): ferryd must be of ferry-cni's API version or one newer. The
 * builds of this checkout both speak API 1; the other pairs are played by a proxy on the socket that
 * restates one side's version. Out of the rule is code 117 naming both versions: from ferryd, before it
 * reads the request; from the shim, before it uses the answer.
 */
import { expect, test } from 'vitest';
import { netConf, newContainerId } from '../fixtures/conf';
import { useFerrydProxy } from '../fixtures/ferryd-proxy';
import { linkNames } from '../fixtures/kernel';
import { useNetns } from '../fixtures/netns';
import { useNode } from '../fixtures/node';
import { pendingFiles } from '../fixtures/queue';
import { runShim } from '../fixtures/shim';

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
