/** STATUS and GC (CNI 1.1) against a live ferryd. */
import { expect, test } from 'vitest';
import { netConf, newContainerId } from '../fixtures/conf';
import type { Ferryd } from '../fixtures/ferryd';
import { linkNames } from '../fixtures/kernel';
import { inNetns, type TestNetns, useNetns } from '../fixtures/netns';
import { useNode } from '../fixtures/node';
import type { Scope } from '../fixtures/scope';
import { runShim } from '../fixtures/shim';

test('STATUS: 0 when ready, 51 when forwarding is off, 50 when the pool is full or ferryd is gone', async (t) => {
  const { node, ferryd } = await useNode(t, { networks: [{ name: 'ferry', ipv4: { subnet: '10.9.0.0/30' } }] });
  const pod = await useNetns(t, 'pod');
  const status = () => runShim(node, 'STATUS', { conf: netConf(ferryd) });

  // Forwarding off (a new namespace copies it from the machine's, so say it): no pod yet, and the node
  // would not route for pods.
  await inNetns(node, 'sysctl', '-qw', 'net.ipv4.ip_forward=0');
  expect((await status()).json).toMatchObject({ code: 51, msg: expect.stringContaining('IPv4 forwarding is off') });
  const add = await runShim(node, 'ADD', {
    containerId: newContainerId(),
    ifName: 'eth0',
    netns: pod,
    conf: netConf(ferryd),
  });
  expect(add.exitCode, add.stdout).toBe(0);
  const ok = await status();
  expect(ok.exitCode, ok.stdout).toBe(0);
  expect(ok.stdout).toBe('');

  await inNetns(node, 'sysctl', '-qw', 'net.ipv4.ip_forward=0');
  expect((await status()).json).toMatchObject({ code: 51 });
  await inNetns(node, 'sysctl', '-qw', 'net.ipv4.ip_forward=1');

  const pod2 = await useNetns(t, 'pod');
  expect(
    (await runShim(node, 'ADD', { containerId: newContainerId(), ifName: 'eth0', netns: pod2, conf: netConf(ferryd) }))
      .exitCode,
  ).toBe(0);
  expect((await status()).json).toMatchObject({ code: 50, msg: expect.stringContaining('10.9.0.0/30 is exhausted') });
  const unknown = await runShim(node, 'STATUS', { conf: netConf(ferryd, { name: 'nope' }) });
  expect(unknown.json).toMatchObject({ code: 50, msg: expect.stringContaining('"nope" is not configured in ferryd') });

  await ferryd.kill('SIGKILL');
  expect((await status()).json).toMatchObject({ code: 50, msg: expect.stringContaining('is unreachable') });
});

/** A pod ADDed through the shim. */
async function addPod(t: Scope, node: TestNetns, ferryd: Ferryd) {
  const call = {
    containerId: newContainerId(),
    ifName: 'eth0',
    netns: await useNetns(t, 'pod'),
    conf: netConf(ferryd),
  };
  expect((await runShim(node, 'ADD', call)).exitCode).toBe(0);
  return call;
}

test('GC releases every attachment not listed valid and deletes its host veth; both attachment keys work', async (t) => {
  const { node, ferryd } = await useNode(t);
  const calls = [];
  for (let i = 0; i < 3; i++) calls.push(await addPod(t, node, ferryd));
  const [keep, stale1, stale2] = calls;
  const gc1 = await runShim(node, 'GC', {
    conf: netConf(ferryd, {
      'cni.dev/valid-attachments': [keep, stale2].map((c) => ({ containerID: c?.containerId, ifname: 'eth0' })),
    }),
  });
  expect(gc1.exitCode, gc1.stdout).toBe(0);
  expect(gc1.stdout).toBe('');
  expect(await linkNames(node)).toHaveLength(3);
  expect(await linkNames(stale1?.netns ?? node)).toEqual(['lo']);

  // The older key libcni also sends (cni#1101).
  const gc2 = await runShim(node, 'GC', {
    conf: netConf(ferryd, { 'cni.dev/attachments': [{ containerID: keep?.containerId, ifname: 'eth0' }] }),
  });
  expect(gc2.exitCode, gc2.stdout).toBe(0);
  expect(await linkNames(node)).toHaveLength(2);
  expect(await ferryd.assignedAddresses()).toHaveLength(2);
  const eps = (await ferryd.request('GET', '/v1/operator/endpoints')).json as { endpoints: { containerId: string }[] };
  expect(eps.endpoints.map((e) => e.containerId)).toEqual([keep?.containerId]);
});

test('GC with ferryd down fails with 11, so the runtime tries again, and removes nothing', async (t) => {
  const { node, ferryd } = await useNode(t);
  const call = await addPod(t, node, ferryd);
  await ferryd.kill('SIGKILL');
  const gc = await runShim(node, 'GC', { conf: netConf(ferryd, { 'cni.dev/valid-attachments': [] }) });
  expect(gc.exitCode).toBe(1);
  expect(gc.json).toMatchObject({
    code: 11,
    msg: expect.stringContaining(`ferryd at ${ferryd.socket} is unreachable`),
  });
  expect(await linkNames(node)).toHaveLength(2);
  await ferryd.start();
  expect((await ferryd.request('GET', `/v1/endpoints/${call.containerId}`)).status).toBe(200);
});
