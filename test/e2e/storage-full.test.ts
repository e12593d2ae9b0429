/**
 * ferryd's database (and the delete queue) on a small tmpfs that the test fills up or turns read-only:
 * ADD fails with code 11 naming the database and the cause and leaves nothing behind, a DEL that ferryd
 * cannot store is queued when the queue can be written and fails with 11 naming both when it cannot,
 * /readyz says why it is not ready, the metric counts, and everything recovers once space is back.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, test } from 'vitest';
import { netConf, newContainerId } from '../fixtures/conf';
import { ferryctl } from '../fixtures/ferryctl';
import type { Ferryd } from '../fixtures/ferryd';
import { linkNames } from '../fixtures/kernel';
import { type TestNetns, useNetns } from '../fixtures/netns';
import { useNode } from '../fixtures/node';
import type { Scope } from '../fixtures/scope';
import { runShim, type ShimCall } from '../fixtures/shim';
import { useTmpfs } from '../fixtures/tmpfs';
import { logged, waitFor } from '../fixtures/wait';

const CODE_TRY_AGAIN_LATER = 11;

const pendingEntries = (dir: string) => readdirSync(dir).filter((f) => f.endsWith('.json'));

async function podCall(t: Scope, ferryd: Ferryd): Promise<ShimCall & { netns: TestNetns }> {
  return {
    containerId: newContainerId(),
    ifName: 'eth0',
    netns: await useNetns(t, 'pod'),
    conf: netConf(ferryd, { deleteQueue: ferryd.deleteQueue }),
  };
}

/** A node whose database and queue live on small tmpfs mounts (one each, or one for both), and a pod added. */
async function useNodeOnTmpfs(t: Scope, queueOnDbDisk = false) {
  const dbDisk = await useTmpfs(t, 'db', 4096);
  const queueDisk = queueOnDbDisk ? dbDisk : await useTmpfs(t, 'queue', 1024);
  const { node, ferryd } = await useNode(t, {
    database: join(dbDisk.dir, 'ferry.db'),
    deleteQueue: join(queueDisk.dir, 'delete-queue'),
  });
  const live = await podCall(t, ferryd);
  expect((await runShim(node, 'ADD', live)).exitCode).toBe(0);
  // Its commit (a journal entry) is promoted now, while the disk has room: whether a later write would
  // still fit in the blocks the WAL already holds is up to the file's layout, not to the test.
  const ep = await ferryd.request('GET', `/v1/endpoints/${live.containerId}`);
  expect((ep.json as { interfaces: { state: string }[] }).interfaces.map((i) => i.state)).toEqual(['committed']);
  return { dbDisk, queueDisk, node, ferryd, live };
}

async function storageErrors(ferryd: Ferryd, operation: string, cause: string): Promise<number> {
  const text = (await ferryd.request('GET', '/metrics')).body;
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`ferry_storage_errors_total{operation="${operation}",cause="${cause}"}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

async function expectIntegrity(ferryd: Ferryd): Promise<void> {
  await ferryd.stop();
  const raw = new Database(ferryd.database, { readonly: true, fileMustExist: true });
  try {
    expect(raw.pragma('integrity_check', { simple: true })).toBe('ok');
  } finally {
    raw.close();
  }
}

test('database disk full: ADD is 11 naming it and leaves nothing, a live DEL is queued, /readyz says why, all recovers', async (t) => {
  const { dbDisk, node, ferryd, live } = await useNodeOnTmpfs(t);
  const liveAddresses = await ferryd.assignedAddresses();
  const nodeLinks = await linkNames(node);

  dbDisk.fill();
  const fresh = await podCall(t, ferryd);
  const add = await runShim(node, 'ADD', fresh);
  expect(add.exitCode).toBe(1);
  expect(add.json).toMatchObject({
    code: CODE_TRY_AGAIN_LATER,
    msg: `allocate: ferryd cannot write its database ${ferryd.database}: no space left on the filesystem (SQLITE_FULL)`,
  });
  // No half-configured pod: the pod has only lo, the node nothing new, ferryd no record and no address.
  expect(await linkNames(fresh.netns)).toEqual(['lo']);
  expect(await linkNames(node)).toEqual(nodeLinks);
  expect((await ferryd.request('GET', `/v1/endpoints/${fresh.containerId}`)).status).toBe(404);
  expect(await ferryd.assignedAddresses()).toEqual(liveAddresses);

  const ready = await ferryd.request('GET', '/readyz');
  expect(ready.status).toBe(503);
  expect(ready.json).toMatchObject({
    ready: false,
    reason: expect.stringMatching(
      new RegExp(`^storage failing since .*: ferryd cannot write its database ${ferryd.database}: .*SQLITE_FULL`),
    ),
  });
  // CNI STATUS: the network is not available, for that reason.
  const status = await runShim(node, 'STATUS', { conf: netConf(ferryd) });
  const { reason } = ready.json as { reason: string };
  expect(status.json).toMatchObject({ code: 50, msg: `network "ferry" is not available: ${reason}` });
  expect((await ferryd.request('GET', '/healthz')).status).toBe(200);
  // What the DaemonSet's readiness probe shows.
  const probe = await ferryctl(ferryd, 'health', '--ready');
  expect(probe.exitCode).toBe(1);
  expect(probe.stderr).toContain(`ferryd cannot write its database ${ferryd.database}`);
  expect(await storageErrors(ferryd, 'allocate', 'full')).toBeGreaterThanOrEqual(1);

  // The queue is on another filesystem, still writable: the DEL that ferryd cannot store is queued.
  const del = await runShim(node, 'DEL', live);
  expect(del.exitCode, del.stdout).toBe(0);
  expect(await linkNames(live.netns)).toEqual(['lo']);
  expect(pendingEntries(ferryd.deleteQueue)).toHaveLength(1);
  expect(await storageErrors(ferryd, 'release', 'full')).toBeGreaterThanOrEqual(1);
  expect((await ferryd.request('GET', `/v1/endpoints/${live.containerId}`)).status).toBe(200);
  // ferryd tries the entry at once (it watches the queue): it waits for the disk, and says why.
  await waitFor('ferryd to try the queued DEL', async () => {
    const q = (await ferryd.request('GET', '/v1/operator/queue')).json as { pending: { lastError?: string }[] };
    return q.pending[0]?.lastError?.includes('(SQLITE_FULL)') ?? false;
  });
  expect(await storageErrors(ferryd, 'drain', 'full')).toBeGreaterThanOrEqual(1);

  dbDisk.free();
  await waitFor('ready again', async () => (await ferryd.request('GET', '/readyz')).status === 200);
  await waitFor('the queued DEL applied', async () => pendingEntries(ferryd.deleteQueue).length === 0);
  expect((await ferryd.request('GET', `/v1/endpoints/${live.containerId}`)).status).toBe(404);
  expect(await ferryd.assignedAddresses()).toEqual([]);
  await logged(ferryd, 'storage writable again');

  const retried = await runShim(node, 'ADD', fresh);
  expect(retried.exitCode, retried.stdout).toBe(0);
  for (const n of [1, 2]) expect((await runShim(node, 'DEL', fresh)).exitCode, `DEL #${n}`).toBe(0);
  expect(await linkNames(fresh.netns)).toEqual(['lo']);
  expect(await ferryd.assignedAddresses()).toEqual([]);
  await expectIntegrity(ferryd);
});

describe.for(['full', 'read-only'] as const)('database full and delete queue %s', (queueState) => {
  test('DEL of a live pod fails with 11 naming both, and goes through once space is back', async (t) => {
    // Full: the default layout, database and queue on one filesystem. Read-only: a queue of its own.
    const { dbDisk, queueDisk, node, ferryd, live } = await useNodeOnTmpfs(t, queueState === 'full');

    dbDisk.fill();
    if (queueState === 'read-only') await queueDisk.remount('ro');
    const del = await runShim(node, 'DEL', live);
    expect(del.exitCode).toBe(1);
    const queueCause = queueState === 'full' ? 'ENOSPC' : 'EROFS';
    expect(del.json).toMatchObject({ code: CODE_TRY_AGAIN_LATER });
    const msg = String(del.json?.msg);
    const database = `release: ferryd cannot write its database ${ferryd.database}: no space left on the filesystem (SQLITE_FULL)`;
    expect(msg.slice(0, database.length)).toBe(database);
    const queue = msg.slice(database.length);
    expect(queue).toMatch(/^; and the DEL could not be queued either: /);
    expect(queue).toContain(ferryd.deleteQueue);
    expect(queue).toContain(queueCause);
    expect(pendingEntries(ferryd.deleteQueue)).toEqual([]);
    expect((await ferryd.request('GET', `/v1/endpoints/${live.containerId}`)).status).toBe(200);

    if (queueState === 'read-only') await queueDisk.remount('rw');
    dbDisk.free();
    await waitFor('ready again', async () => (await ferryd.request('GET', '/readyz')).status === 200);
    // The runtime retries the DEL: it goes through, and a second one too.
    for (const n of [1, 2]) expect((await runShim(node, 'DEL', live)).exitCode, `DEL #${n}`).toBe(0);
    expect(await linkNames(live.netns)).toEqual(['lo']);
    expect((await ferryd.request('GET', `/v1/endpoints/${live.containerId}`)).status).toBe(404);
    expect(await ferryd.assignedAddresses()).toEqual([]);
    await expectIntegrity(ferryd);
  });
});

test('ferryd restarted on the full disk starts not ready, saying why, and recovers once space is back', async (t) => {
  const { dbDisk, node, ferryd, live } = await useNodeOnTmpfs(t);
  dbDisk.fill();
  expect((await runShim(node, 'DEL', live)).exitCode).toBe(0);
  expect(pendingEntries(ferryd.deleteQueue)).toHaveLength(1);

  // A crash (or an impatient operator) while the disk is full: start-up drains the queue and cannot write.
  await ferryd.kill('SIGKILL');
  await ferryd.start({ untilAlive: true });
  const ready = await ferryd.request('GET', '/readyz');
  expect(ready.status).toBe(503);
  expect((ready.json as { reason: string }).reason).toMatch(
    new RegExp(`: drain: ferryd cannot write its database ${ferryd.database}: .*\\(SQLITE_FULL\\)$`),
  );

  dbDisk.free();
  await waitFor('ready again', async () => (await ferryd.request('GET', '/readyz')).status === 200);
  await waitFor('the queued DEL applied', async () => pendingEntries(ferryd.deleteQueue).length === 0);
  expect(await ferryd.assignedAddresses()).toEqual([]);
  await expectIntegrity(ferryd);
});
