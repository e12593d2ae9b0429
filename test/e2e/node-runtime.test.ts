/**
 * The Node side of the shim's runtime seam (dist/lib/ferry-cni-node.mjs): the same round trip as the
 * shipped Bun binary, so both implementations of spawn and HTTP are exercised for real.
 */
import { expect, test } from 'vitest';
import { netConf, newContainerId } from '../fixtures/conf';
import { linkNames, ping } from '../fixtures/kernel';
import { useNetns } from '../fixtures/netns';
import { useNode } from '../fixtures/node';
import { runShim } from '../fixtures/shim';

test('ADD → CHECK → DEL → DEL through the Node runtime', async (t) => {
  const prev = process.env.FERRY_SHIM;
  process.env.FERRY_SHIM = 'node';
  t.onTestFinished(() => {
    if (prev === undefined) delete process.env.FERRY_SHIM;
    else process.env.FERRY_SHIM = prev;
  });
  const { node, ferryd } = await useNode(t);
  const pod = await useNetns(t, 'pod');
  const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf: netConf(ferryd) };
  const add = await runShim(node, 'ADD', call);
  expect(add.exitCode, add.stdout).toBe(0);
  const ip = (add.json as { ips: { address: string }[] }).ips[0]?.address.split('/')[0] ?? '';
  expect(await ping(node, ip)).toBe(true);
  expect((await runShim(node, 'CHECK', { ...call, conf: netConf(ferryd, { prevResult: add.json }) })).exitCode).toBe(0);
  for (const n of [1, 2]) expect((await runShim(node, 'DEL', call)).exitCode, `DEL #${n}`).toBe(0);
  expect(await linkNames(node)).toEqual(['lo']);
  expect(await ferryd.assignedAddresses()).toEqual([]);

  await ferryd.kill('SIGKILL');
  const down = await runShim(node, 'ADD', { ...call, conf: netConf(ferryd, { daemonTimeouts: { addWaitMs: 300 } }) });
  expect(down.json).toMatchObject({ code: 11 });
});
