/** A full Kubernetes node: 110 pods ADDed at once, then all DELed at once. */
import { expect, test } from 'vitest';
import { netConf, newContainerId } from '../fixtures/conf';
import { linkNames } from '../fixtures/kernel';
import { useNetns } from '../fixtures/netns';
import { useNode } from '../fixtures/node';
import { runShim } from '../fixtures/shim';

const PODS = 110;

test(`${PODS} concurrent ADDs get distinct addresses; ${PODS} concurrent DELs leave nothing`, async (t) => {
  const { node, ferryd } = await useNode(t, { logLevel: 'info' });
  const pods = await Promise.all(Array.from({ length: PODS }, () => useNetns(t, 'pod')));
  const calls = pods.map((pod) => ({
    containerId: newContainerId(),
    ifName: 'eth0',
    netns: pod,
    conf: netConf(ferryd, { logLevel: 'info', daemonTimeouts: { requestMs: 60_000, addWaitMs: 10_000 } }),
  }));

  const adds = await Promise.all(calls.map((c) => runShim(node, 'ADD', c)));
  const failed = adds.filter((r) => r.exitCode !== 0);
  expect(failed.map((r) => r.stdout)).toEqual([]);
  const addrs = adds.flatMap((r) => (r.json as { ips: { address: string }[] }).ips.map((ip) => ip.address));
  expect(addrs).toHaveLength(PODS * 2);
  expect(new Set(addrs).size).toBe(PODS * 2);
  expect(await linkNames(node)).toHaveLength(PODS + 1);
  expect((await ferryd.request('GET', '/v1/operator/invariants')).json).toEqual({ ok: true, violations: [] });

  const dels = await Promise.all(calls.map((c) => runShim(node, 'DEL', c)));
  expect(dels.filter((r) => r.exitCode !== 0).map((r) => r.stdout)).toEqual([]);
  expect(await linkNames(node)).toEqual(['lo']);
  expect(await ferryd.assignedAddresses()).toEqual([]);
  for (const pod of pods) expect(await linkNames(pod)).toEqual(['lo']);
});
