/** ADD, CHECK with ferryd down: code 11 within the bounded wait, and nothing configured in the pod. */
import { expect, test } from 'vitest';
import { netConf, newContainerId } from '../fixtures/conf';
import { linkNames } from '../fixtures/kernel';
import { useNetns } from '../fixtures/netns';
import { useNode } from '../fixtures/node';
import { runShim } from '../fixtures/shim';

test('ADD with ferryd down waits for readiness a bounded time, fails with 11 naming the socket, leaves nothing', async (t) => {
  const { node, ferryd } = await useNode(t);
  const pod = await useNetns(t, 'pod');
  await ferryd.kill('SIGKILL');
  const call = {
    containerId: newContainerId(),
    ifName: 'eth0',
    netns: pod,
    conf: netConf(ferryd, { daemonTimeouts: { addWaitMs: 1500 } }),
  };
  const add = await runShim(node, 'ADD', call);
  expect(add.exitCode).toBe(1);
  expect(add.json).toMatchObject({
    code: 11,
    msg: expect.stringContaining(`ferryd at ${ferryd.socket} is not ready after 1500 ms`),
  });
  expect(await linkNames(pod)).toEqual(['lo']);
  expect(await linkNames(node)).toEqual(['lo']);

  const check = await runShim(node, 'CHECK', {
    ...call,
    conf: netConf(ferryd, { prevResult: { cniVersion: '1.1.0' } }),
  });
  expect(check.json).toMatchObject({ code: 11, msg: expect.stringContaining('is unreachable') });
});

test('ADD with ferryd frozen (SIGSTOP) ends at the deadline with 11; after SIGCONT it works', async (t) => {
  const { node, ferryd } = await useNode(t);
  const pod = await useNetns(t, 'pod');
  await ferryd.kill('SIGSTOP');
  const conf = netConf(ferryd, { daemonTimeouts: { addWaitMs: 1000, requestMs: 500 } });
  const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf };
  const add = await runShim(node, 'ADD', call);
  expect(add.json).toMatchObject({ code: 11, msg: expect.stringContaining('is not ready after 1000 ms') });
  await ferryd.resume();
  const again = await runShim(node, 'ADD', call);
  expect(again.exitCode, again.stdout).toBe(0);
});
