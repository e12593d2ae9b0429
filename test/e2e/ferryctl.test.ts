/** ferryctl against a live ferryd: tables, --json, doctor on a healthy and on a corrupted store. */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { expect, test } from 'vitest';
import { netConf, newContainerId } from '../fixtures/conf';
import { useNodeWithDevices } from '../fixtures/device';
import { ferryctl } from '../fixtures/ferryctl';
import { inNetns, removeNetns, useNetns } from '../fixtures/netns';
import { useNode } from '../fixtures/node';
import { queueEntry, queueReport, writeQueueEntry } from '../fixtures/queue';
import { runShim } from '../fixtures/shim';

test('endpoints, ipam and doctor; doctor reports a store broken behind ferryd', async (t) => {
  const { node, ferryd } = await useNode(t);
  const pod = await useNetns(t, 'pod');
  const containerId = newContainerId();
  const add = await runShim(node, 'ADD', {
    containerId,
    ifName: 'eth0',
    netns: pod,
    conf: netConf(ferryd),
    cniArgs: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0',
  });
  expect(add.exitCode, add.stdout).toBe(0);

  const eps = await ferryctl(ferryd, 'endpoints');
  expect(eps.exitCode, eps.stderr).toBe(0);
  expect(eps.stdout).toMatch(/^CONTAINER\s+POD\s+IFNAME/);
  expect(eps.stdout).toContain('default/web-0');
  expect(eps.stdout).toContain('10.244.1.1/32,fd00:10:244:1::1/128');
  const filtered = await ferryctl(ferryd, 'endpoints', '--namespace', 'kube-system', '--json');
  expect(JSON.parse(filtered.stdout)).toEqual({ endpoints: [] });
  const show = await ferryctl(ferryd, 'endpoints', 'show', containerId, '--json');
  expect(JSON.parse(show.stdout).interfaces[0]).toMatchObject({
    ifName: 'eth0',
    nicType: 'InfraNIC',
    endpointId: containerId,
  });

  const ipam = await ferryctl(ferryd, 'ipam');
  expect(ipam.stdout).toMatch(/ferry\s+IPv4\s+10\.244\.1\.0\/24\s+254\s+1\s+0\s+253\s+30s/);

  expect(await ferryctl(ferryd, 'doctor')).toMatchObject({ exitCode: 0, stdout: 'ok: every invariant holds' });
  // ferryd holds the database exclusively while it runs: the store is broken while it is stopped.
  await ferryd.stop();
  const db = new Database(ferryd.database);
  db.prepare("DELETE FROM addresses WHERE address = '10.244.1.1'").run();
  db.close();
  await ferryd.start();
  const sick = await ferryctl(ferryd, 'doctor');
  expect(sick.exitCode).toBe(1);
  expect(sick.stdout).toContain('endpoint-without-address');
  expect(sick.stdout).toContain(`${containerId}/eth0`);
});

test('ferryctl says clearly when ferryd is down, and on bad usage', async (t) => {
  const { ferryd } = await useNode(t);
  await ferryd.kill('SIGKILL');
  const down = await ferryctl(ferryd, 'endpoints');
  expect(down.exitCode).toBe(3);
  expect(down.stderr).toMatch(/^ferryctl: ferryd is unreachable at socket .*ferryd\.sock: (ECONNREFUSED|ENOENT)/);
  const bad = await ferryctl(ferryd, 'frobnicate');
  expect(bad.exitCode).toBe(2);
  expect(bad.stderr).toContain('unknown command "frobnicate"');
});

test('doctor reports a vanished netns and a set-aside queue entry; gc cleans up after a dry run; devices and queue commands', async (t) => {
  const mac = '02:fe:00:00:cc:01';
  // A long period: the test, not the reconciler, decides when things are repaired.
  const { node, ferryd } = await useNodeWithDevices(t, [{ name: 'eth4', mac }], { reconcile: { intervalSec: 3600 } });
  expect((await ferryctl(ferryd, 'devices')).stdout).toMatch(/02:fe:00:00:cc:01\s+-\s+frontend\s+eth4\s+free/);

  const withDevice = { containerId: newContainerId(), ifName: 'eth0', netns: await useNetns(t, 'pod') };
  const conf = netConf(ferryd, { delegatedNICs: { group: 'frontend', count: 1 } });
  expect((await runShim(node, 'ADD', { ...withDevice, conf })).exitCode).toBe(0);
  const doomed = await useNetns(t, 'pod');
  const doomedId = newContainerId();
  expect(
    (await runShim(node, 'ADD', { containerId: doomedId, ifName: 'eth0', netns: doomed, conf: netConf(ferryd) }))
      .exitCode,
  ).toBe(0);
  expect(await ferryctl(ferryd, 'doctor')).toMatchObject({ exitCode: 0 });

  await removeNetns(doomed.name);
  await inNetns(withDevice.netns, 'ip', 'link', 'set', 'net1', 'netns', node.path);
  writeFileSync(join(ferryd.deleteQueue, 'not-an-entry.json'), '{}');
  expect((await ferryctl(ferryd, 'reconcile')).stdout).toMatch(
    /^cooled down: \d+ addresses; stale endpoints released: \d+; devices refunded: \d+, renamed home: \d+; queued DELs applied: \d+; adopted from the node: \d+, released \(host veth gone\): \d+; released after a reboot: \d+$/,
  );
  const sick = await ferryctl(ferryd, 'doctor', '--json');
  expect(sick.exitCode).toBe(1);
  const kinds = (JSON.parse(sick.stdout) as { violations: { kind: string; subject: string }[] }).violations.map(
    (v) => v.kind,
  );
  expect(kinds).toEqual(expect.arrayContaining(['netns-missing', 'queue-failed']));
  const queue = await ferryctl(ferryd, 'queue');
  expect(queue.stdout).toContain('1 set aside');
  expect(queue.stdout).toContain('"not-an-entry.json"');
  const failed = (JSON.parse((await ferryctl(ferryd, 'queue', '--json')).stdout) as { failed: { file: string }[] })
    .failed;
  const retry = await ferryctl(ferryd, 'queue', 'retry', failed[0]?.file ?? '');
  expect(retry.exitCode).toBe(1);
  expect(retry.stderr).toContain('was not written by ferry-cni ("not-an-entry.json"); it cannot be retried');

  const dry = await ferryctl(ferryd, 'gc');
  expect(dry.exitCode).toBe(0);
  expect(dry.stdout).toContain('dry run: 1 would be released');
  expect((await ferryd.request('GET', `/v1/endpoints/${doomedId}`)).status).toBe(200);
  expect((await ferryctl(ferryd, 'gc', '--apply')).stdout).toContain('released 1');
  expect((await ferryd.request('GET', `/v1/endpoints/${doomedId}`)).status).toBe(404);

  const reserve = await ferryctl(ferryd, 'devices', 'reserve', mac, '--namespace', 'shop', '--pod', 'db-0');
  expect(reserve.stdout).toBe(`${mac} reserved for shop/db-0`);
  expect((await ferryctl(ferryd, 'devices', 'unreserve', mac)).stdout).toBe(`${mac} not reserved`);
  expect(await ferryctl(ferryd, 'health', '--ready')).toMatchObject({ exitCode: 0, stdout: 'ready' });
});

test('doctor catches a delegated device on the node while a live pod is recorded as holding it', async (t) => {
  const mac = '02:fe:00:00:cc:02';
  const { node, ferryd } = await useNodeWithDevices(t, [{ name: 'eth4', mac }], { reconcile: { intervalSec: 3600 } });
  const pod = await useNetns(t, 'pod');
  const conf = netConf(ferryd, { delegatedNICs: { group: 'frontend', count: 1 } });
  expect(
    (await runShim(node, 'ADD', { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf })).exitCode,
  ).toBe(0);
  // Moved out behind Ferry's back while the pod lives (no reconcile pass has seen it yet).
  await inNetns(pod, 'ip', 'link', 'set', 'net1', 'netns', node.path);
  const r = await ferryctl(ferryd, 'doctor');
  expect(r.exitCode).toBe(1);
  expect(r.stdout).toMatch(/device-misplaced\s+02:fe:00:00:cc:02\s+assigned to .*\/net1 but on the node/);
});

test('queue retry: an entry set aside as invalid, fixed by the operator, is put back and applied', async (t) => {
  // The reconciler is an hour away: `ferryctl reconcile` drains when the test says so.
  const { ferryd } = await useNode(t, { reconcile: { intervalSec: 3600 } });
  const attachment = { containerId: newContainerId(), ifName: 'eth0' };
  const a = await ferryd.request('POST', '/v1/allocations', {
    network: 'ferry',
    ...attachment,
    netns: '/proc/self/ns/net',
  });
  expect(a.status, a.body).toBe(200);
  writeQueueEntry(ferryd.deleteQueue, attachment, { queuedAt: 'yesterday' });
  expect((await ferryctl(ferryd, 'reconcile')).exitCode).toBe(0);
  const { failed } = await queueReport(ferryd);
  expect(failed.map((f) => f.reason)).toEqual([expect.stringMatching(/^invalid entry: queuedAt: /)]);
  const file = failed[0]?.file ?? '';
  expect((await ferryd.request('GET', `/v1/endpoints/${attachment.containerId}`)).status).toBe(200);

  // What the runbook says: read the reason, fix the cause (here the entry itself), put it back.
  const setAside = join(ferryd.deleteQueue, 'failed', file);
  writeFileSync(setAside, JSON.stringify(queueEntry(attachment)));
  const retry = await ferryctl(ferryd, 'queue', 'retry', file);
  expect(retry.exitCode, retry.stderr).toBe(0);
  expect(retry.stdout).toMatch(/, 0 set aside$/m);
  expect(existsSync(setAside)).toBe(false);
  expect((await ferryctl(ferryd, 'reconcile')).exitCode).toBe(0);
  expect((await ferryd.request('GET', `/v1/endpoints/${attachment.containerId}`)).status).toBe(404);
  expect(await ferryd.assignedAddresses()).toEqual([]);
  expect(await queueReport(ferryd)).toMatchObject({ pending: [], failed: [] });
});
