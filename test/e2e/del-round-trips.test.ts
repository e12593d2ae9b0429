/**
 * How many requests a DEL makes of a running ferryd, counted in the shim's own log ('asking ferryd',
 * one line per request): the usual attachment (an InfraNIC alone) is deleted and released in one; an
 * attachment that needs its record (DelegatedNICs) in two, the teardown between them.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { netConf, newContainerId } from '../fixtures/conf';
import { useNodeWithDevices } from '../fixtures/device';
import type { Ferryd } from '../fixtures/ferryd';
import { link, linkNames } from '../fixtures/kernel';
import type { TestNetns } from '../fixtures/netns';
import { inNetns, removeNetns, useNetns } from '../fixtures/netns';
import { useNode } from '../fixtures/node';
import { runShim, type ShimCall, type ShimRun } from '../fixtures/shim';
import { waitFor } from '../fixtures/wait';

interface Del {
  run: ShimRun;
  /** `METHOD path` of every request this DEL made, in order. */
  requests: string[];
}

/** Runs one DEL and reads the requests it logged (the log lines it appended that carry its containerId). */
async function del(node: TestNetns, ferryd: Ferryd, call: ShimCall): Promise<Del> {
  const log = join(ferryd.dir, 'cni.log');
  const before = statSync(log, { throwIfNoEntry: false })?.size ?? 0;
  const run = await runShim(node, 'DEL', call);
  const requests = readFileSync(log)
    .subarray(before)
    .toString('utf8')
    .split('\n')
    .filter((l) => l.includes('"msg":"asking ferryd"') && l.includes(`${call.containerId}`))
    .map((l) => JSON.parse(l) as { method: string; path: string })
    .map((l) => `${l.method} ${l.path}`);
  return { run, requests };
}

const hostVethsOn = async (node: TestNetns) => (await linkNames(node)).filter((n) => n.startsWith('fry'));

/** The one request of the usual DEL. */
const releaseIfOnly = (containerId: string, network = 'ferry') =>
  `DELETE /v1/endpoints/${containerId}?network=${network}&ifName=eth0&hostVethDeleted=true`;

describe('the usual DEL (an InfraNIC alone) is one request', () => {
  test('ADD → DEL: one request releases the addresses, the veth is gone; a second DEL is one request too', async (t) => {
    const { node, ferryd } = await useNode(t);
    const pod = await useNetns(t, 'pod');
    const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf: netConf(ferryd) };
    const add = await runShim(node, 'ADD', call);
    expect(add.exitCode, add.stdout).toBe(0);
    expect(await hostVethsOn(node)).toHaveLength(1);
    expect(await ferryd.assignedAddresses()).toHaveLength(2);

    for (const n of [1, 2]) {
      const d = await del(node, ferryd, call);
      expect(d.run.exitCode, `DEL #${n}: ${d.run.stdout}`).toBe(0);
      expect(d.requests, `DEL #${n}`).toEqual([releaseIfOnly(call.containerId)]);
    }
    expect(await ferryd.assignedAddresses()).toEqual([]);
    expect(await linkNames(node)).toEqual(['lo']);
    expect(await linkNames(pod)).toEqual(['lo']);
    expect((await ferryd.request('GET', `/v1/endpoints/${call.containerId}`)).status).toBe(404);
    // ferryd's log lines reach the file asynchronously (pino).
    await waitFor('ferryd to log the release', async () =>
      ferryd.log().includes(`"containerId":"${call.containerId}"`),
    );
  });

  test('with the netns gone (CNI_NETNS vanished or empty), and with no ADD at all, still one request', async (t) => {
    const { node, ferryd } = await useNode(t);
    for (const variant of ['vanished', 'empty'] as const) {
      const pod = await useNetns(t, 'pod');
      const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf: netConf(ferryd) };
      expect((await runShim(node, 'ADD', call)).exitCode).toBe(0);
      await removeNetns(pod.name);
      const d = await del(node, ferryd, { ...call, netns: variant === 'empty' ? '' : pod.path });
      expect(d.run.exitCode, d.run.stdout).toBe(0);
      expect(d.requests, variant).toEqual([releaseIfOnly(call.containerId)]);
      expect(await ferryd.assignedAddresses(), variant).toEqual([]);
      expect(await linkNames(node), variant).toEqual(['lo']);
    }
    const pod = await useNetns(t, 'pod');
    const never = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf: netConf(ferryd) };
    const d = await del(node, ferryd, never);
    expect(d.run.exitCode, d.run.stdout).toBe(0);
    expect(d.requests).toEqual([releaseIfOnly(never.containerId)]);
  });

  test("a DEL naming another network leaves this attachment's veth, pod and addresses alone", async (t) => {
    const { node, ferryd } = await useNode(t, {
      networks: [
        { name: 'ferry', ipv4: { subnet: '10.244.1.0/24' } },
        { name: 'other', ipv4: { subnet: '10.245.1.0/24' } },
      ],
    });
    const pod = await useNetns(t, 'pod');
    const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf: netConf(ferryd) };
    expect((await runShim(node, 'ADD', call)).exitCode).toBe(0);
    const veths = await hostVethsOn(node);
    // The runtime adds a second network under the same ifName: ferryd refuses it, the runtime cleans up.
    const other = { ...call, conf: netConf(ferryd, { name: 'other' }) };
    const refused = await runShim(node, 'ADD', other);
    expect(refused.json).toMatchObject({ code: 105 });
    const d = await del(node, ferryd, other);
    expect(d.run.exitCode, d.run.stdout).toBe(0);
    expect(d.requests).toEqual([releaseIfOnly(call.containerId, 'other')]);
    expect(await hostVethsOn(node)).toEqual(veths);
    expect(await linkNames(pod)).toEqual(['eth0', 'lo']);
    expect(await ferryd.assignedAddresses()).toHaveLength(1);
    expect((await ferryd.request('GET', `/v1/endpoints/${call.containerId}`)).status).toBe(200);
  });
});

describe('a DEL that needs the record is two requests, the teardown between them', () => {
  test('DelegatedNICs: kept by the first request, brought home, then released by the second', async (t) => {
    const devices = [{ name: 'eth1', mac: '02:fe:00:00:0d:01' }];
    const { node, ferryd } = await useNodeWithDevices(t, devices);
    const pod = await useNetns(t, 'pod');
    const conf = netConf(ferryd, { delegatedNICs: { group: 'frontend', count: 1 } });
    const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf };
    expect((await runShim(node, 'ADD', call)).exitCode).toBe(0);
    expect(await linkNames(pod)).toEqual(['eth0', 'lo', 'net1']);

    const d = await del(node, ferryd, call);
    expect(d.run.exitCode, d.run.stdout).toBe(0);
    expect(d.requests).toEqual([
      releaseIfOnly(call.containerId),
      `DELETE /v1/endpoints/${call.containerId}?network=ferry&ifName=eth0`,
    ]);
    expect(await linkNames(pod)).toEqual(['lo']);
    expect((await link(node, 'eth1'))?.address).toBe('02:fe:00:00:0d:01');
    expect(await hostVethsOn(node)).toEqual([]);
    expect(await ferryd.assignedAddresses()).toEqual([]);
    const again = await del(node, ferryd, call);
    expect(again.run.exitCode, again.run.stdout).toBe(0);
    expect(again.requests).toEqual([releaseIfOnly(call.containerId)]);
  });
});

describe('a host veth that cannot be deleted', () => {
  test('the DEL fetches the record, fails on that veth before anything is released, and succeeds once it can', async (t) => {
    const { node, ferryd } = await useNode(t);
    const pod = await useNetns(t, 'pod');
    const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf: netConf(ferryd) };
    expect((await runShim(node, 'ADD', call)).exitCode).toBe(0);
    const [veth = ''] = await hostVethsOn(node);
    // The kernel refuses to delete a loopback device ("Operation not supported"): it takes the veth's name.
    await inNetns(node, 'ip', 'link', 'set', veth, 'down');
    await inNetns(node, 'ip', 'link', 'set', veth, 'name', 'hidden0');
    await inNetns(node, 'ip', 'link', 'set', 'lo', 'down');
    await inNetns(node, 'ip', 'link', 'set', 'lo', 'name', veth);

    const failed = await del(node, ferryd, call);
    expect(failed.run.exitCode).toBe(1);
    expect(failed.run.json).toMatchObject({ code: 103, msg: expect.stringContaining(veth) });
    expect(failed.requests).toEqual([`GET /v1/endpoints/${call.containerId}`]);
    expect((await ferryd.request('GET', `/v1/endpoints/${call.containerId}`)).status).toBe(200);
    expect(await ferryd.assignedAddresses()).toHaveLength(2);

    await inNetns(node, 'ip', 'link', 'set', veth, 'name', 'lo');
    await inNetns(node, 'ip', 'link', 'set', 'lo', 'up');
    await inNetns(node, 'ip', 'link', 'set', 'hidden0', 'name', veth);
    const retry = await del(node, ferryd, call);
    expect(retry.run.exitCode, retry.run.stdout).toBe(0);
    expect(retry.requests).toEqual([releaseIfOnly(call.containerId)]);
    expect(await linkNames(node)).toEqual(['lo']);
    expect(await ferryd.assignedAddresses()).toEqual([]);
  });
});
