/**
 * ADD creates the InfraNIC's veth pair while ferryd allocates (nothing about the pair depends on the
 * plan). What that must never cost: a pod left configured without a record while ADD waits for ferryd, a
 * pair left behind when ferryd refuses the ADD, or the live pod's pair touched by a second ADD.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { hostVethNameOf } from '@ferry/shared-types/host-veth';
import { expect, test } from 'vitest';
import { netConf, newContainerId } from '../fixtures/conf';
import { link, linkNames } from '../fixtures/kernel';
import { useNetns } from '../fixtures/netns';
import { useNode } from '../fixtures/node';
import { runShim } from '../fixtures/shim';
import { waitFor } from '../fixtures/wait';

const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');

test('the pair exists while ferryd is still allocating, and the ADD finishes on it once ferryd answers', async (t) => {
  const { node, ferryd } = await useNode(t);
  const pod = await useNetns(t, 'pod');
  const containerId = newContainerId();
  const hostVeth = hostVethNameOf(sha256Hex, 'ferry', containerId, 'eth0');
  const conf = netConf(ferryd, { daemonTimeouts: { requestMs: 20_000, addWaitMs: 20_000 } });
  const call = { containerId, ifName: 'eth0', netns: pod, conf };
  await ferryd.kill('SIGSTOP');
  const adding = runShim(node, 'ADD', call);
  let early: Awaited<ReturnType<typeof link>>;
  try {
    await waitFor('the pair, ferryd frozen', async () => (await linkNames(node)).includes(hostVeth), 10_000);
    expect(await linkNames(pod)).toContain('eth0');
    early = await link(node, hostVeth);
  } finally {
    await ferryd.resume();
  }
  const add = await adding;
  expect(add.exitCode, add.stdout).toBe(0);
  expect(add.json).toMatchObject({ interfaces: [{ name: hostVeth }, { name: 'eth0', sandbox: pod.path }] });
  // The same pair, finished: not deleted and made again after the plan.
  expect((await link(node, hostVeth))?.ifindex).toBe(early?.ifindex);
  const check = await runShim(node, 'CHECK', { ...call, conf: netConf(ferryd, { prevResult: add.json }) });
  expect(check.exitCode, check.stdout).toBe(0);
  expect((await runShim(node, 'DEL', call)).exitCode).toBe(0);
  expect(await linkNames(node)).toEqual(['lo']);
});

test('ferryd refuses the ADD: the pair made while it decided is removed', async (t) => {
  const { node, ferryd } = await useNode(t);
  const pod = await useNetns(t, 'pod');
  // A network ferryd does not serve: the shim cannot know before ferryd answers.
  const add = await runShim(node, 'ADD', {
    containerId: newContainerId(),
    ifName: 'eth0',
    netns: pod,
    conf: { ...netConf(ferryd), name: 'elsewhere' },
  });
  expect(add.exitCode).toBe(1);
  expect(add.json).toMatchObject({ msg: expect.stringContaining('elsewhere') });
  expect(await linkNames(node)).toEqual(['lo']);
  expect(await linkNames(pod)).toEqual(['lo']);
});

test("a second ADD of a live attachment gets 105 and leaves the live pod's pair as it was", async (t) => {
  const { node, ferryd } = await useNode(t);
  const pod = await useNetns(t, 'pod');
  const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf: netConf(ferryd) };
  const add = await runShim(node, 'ADD', call);
  expect(add.exitCode, add.stdout).toBe(0);
  const hostVeth = hostVethNameOf(sha256Hex, 'ferry', call.containerId, 'eth0');
  const [hostBefore, podBefore] = [await link(node, hostVeth), await link(pod, 'eth0')];

  const again = await runShim(node, 'ADD', call);
  expect(again.json).toMatchObject({ code: 105 });
  expect(await link(node, hostVeth)).toEqual(hostBefore);
  expect(await link(pod, 'eth0')).toEqual(podBefore);
  const check = await runShim(node, 'CHECK', { ...call, conf: netConf(ferryd, { prevResult: add.json }) });
  expect(check.exitCode, check.stdout).toBe(0);
});

test('ferryd not running: no pair stays in the pod while ADD waits for it, and the ADD then works', async (t) => {
  const { node, ferryd } = await useNode(t);
  const pod = await useNetns(t, 'pod');
  await ferryd.kill('SIGKILL');
  const call = {
    containerId: newContainerId(),
    ifName: 'eth0',
    netns: pod,
    conf: netConf(ferryd, { daemonTimeouts: { addWaitMs: 20_000 } }),
  };
  const adding = runShim(node, 'ADD', call);
  // Once the shim says it waits, the pair it made while asking is gone again.
  const shimLog = `${ferryd.dir}/cni.log`;
  await waitFor('the shim to wait for ferryd', async () =>
    (await readFile(shimLog, 'utf8').catch(() => '')).includes('"msg":"ferryd not ready; waiting"'),
  );
  expect(await linkNames(pod)).toEqual(['lo']);
  expect(await linkNames(node)).toEqual(['lo']);
  await ferryd.start();
  const add = await adding;
  expect(add.exitCode, add.stdout).toBe(0);
  expect(await linkNames(pod)).toContain('eth0');
});
