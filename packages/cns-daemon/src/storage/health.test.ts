import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Code } from '@ferry/shared-types/errors';
import pino from 'pino';
import { expect, test } from 'vitest';
import { type Harness, tempDir, useApp } from '../testing/harness';
import { StorageHealth, type StorageHealthDeps } from './health';

const full = () => Object.assign(new Error('database or disk is full'), { name: 'SqliteError', code: 'SQLITE_FULL' });

function useHealth(t: Parameters<typeof tempDir>[0], over: Partial<StorageHealthDeps> = {}) {
  const dir = tempDir(t);
  const counted: string[] = [];
  let recovered = 0;
  const deps: StorageHealthDeps = {
    database: join(dir, 'ferry.db'),
    log: pino({ level: 'silent' }),
    now: () => 1_000_000,
    probeWrite: () => undefined,
    count: (operation, cause) => counted.push(`${operation}/${cause}`),
    // Probes run when the test says so.
    probeIntervalMs: 3_600_000,
    minFreeBytes: 1,
  };
  // Descriptors, not a spread: a getter in `over` stays live.
  Object.defineProperties(deps, Object.getOwnPropertyDescriptors(over));
  const health = new StorageHealth(deps);
  t.onTestFinished(() => health.stop());
  health.onRecovered(() => recovered++);
  return { health, dir, counted, recovered: () => recovered };
}

test('a storage fault becomes StorageFailure naming the database and the cause; other errors pass', (t) => {
  const { health, dir, counted } = useHealth(t);
  expect(health.errorOf(new Error('boom'), 'allocate')).toBeUndefined();
  expect(health.failing).toBeUndefined();

  const err = health.errorOf(full(), 'allocate');
  expect(err?.code).toBe(Code.StorageFailure);
  expect(err?.message).toBe(
    `allocate: ferryd cannot write its database ${dir}/ferry.db: no space left on the filesystem (SQLITE_FULL)`,
  );
  expect(health.failing).toMatchObject({
    operation: 'allocate',
    path: `${dir}/ferry.db`,
    cause: 'full',
    sinceMs: 1_000_000,
  });

  const fsErr = Object.assign(new Error('EROFS'), { code: 'EROFS', syscall: 'open', path: `${dir}/q/x.json` });
  expect(health.errorOf(fsErr, 'drain')?.message).toBe(
    `drain: ferryd cannot write ${dir}/q/x.json: the filesystem is read-only (EROFS)`,
  );
  expect(counted).toEqual(['allocate/full', 'drain/read-only']);
});

test('ready again only when the filesystem has room, the directory is writable and a write commits', (t) => {
  let writeFails = true;
  let minFree = Number.MAX_SAFE_INTEGER;
  const { health, recovered } = useHealth(t, {
    probeWrite: () => {
      if (writeFails) throw full();
    },
    get minFreeBytes() {
      return minFree;
    },
  });
  expect(health.probe()).toBe(true);
  health.errorOf(full(), 'release');
  expect(health.probe()).toBe(false); // no filesystem has that much room
  minFree = 1;
  expect(health.probe()).toBe(false); // the write still fails
  expect(health.failing?.operation).toBe('release');
  writeFails = false;
  expect(health.probe()).toBe(true);
  expect(health.failing).toBeUndefined();
  expect(recovered()).toBe(1);
});

test('the probe runs by itself while failing, and not after stop', async (t) => {
  let probes = 0;
  const { health } = useHealth(t, {
    probeIntervalMs: 5,
    probeWrite: () => {
      probes++;
      throw full();
    },
  });
  health.errorOf(full(), 'commit');
  await expect.poll(() => probes).toBeGreaterThan(1);
  health.stop();
  const after = probes;
  await new Promise((r) => setTimeout(r, 30));
  expect(probes).toBe(after);
});

/** Caps the database at its current size: SQLite then fails writes with SQLITE_FULL, as on a full disk. */
function capDatabase(h: Harness): void {
  h.db.pragma(`max_page_count = ${Number(h.db.pragma('page_count', { simple: true }))}`);
}

async function allocateUntilFull(h: Harness) {
  for (let i = 0; i < 250; i++) {
    const r = await h.app.inject({
      method: 'POST',
      url: '/v1/allocations',
      payload: { network: 'ferry', containerId: `c${i}`, ifName: 'eth0', netns: '/proc/self/ns/net' },
    });
    if (r.statusCode !== 200) return r;
  }
  throw new Error('the capped database never filled up');
}

test('through the app: ADD answers 503/StorageFailure, /readyz and /v1/status say why, the metric counts, a probe brings it back', async (t) => {
  const h = await useApp(t);
  capDatabase(h);
  const r = await allocateUntilFull(h);
  // The background probe's one-page write fits under the cap; read-only keeps it failing until the test
  // frees the "disk" (on a real disk statfs holds it back: storage/health.ts).
  h.db.pragma('query_only = ON');
  expect(r.statusCode).toBe(503);
  expect(r.json()).toMatchObject({
    code: Code.StorageFailure,
    msg: `allocate: ferryd cannot write its database ${h.config.database}: no space left on the filesystem (SQLITE_FULL)`,
  });

  const ready = await h.app.inject({ method: 'GET', url: '/readyz' });
  expect(ready.statusCode).toBe(503);
  expect(ready.json()).toEqual({
    ready: false,
    phase: 'ready',
    reason: `storage failing since ${new Date(h.clock.now).toISOString()}: ${r.json().msg}`,
  });
  const status = (await h.app.inject({ method: 'GET', url: '/v1/status?network=ferry' })).json();
  expect(status).toMatchObject({ ready: false, reason: ready.json().reason });
  // Alive all the same: reads work, a restart would not help.
  expect((await h.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  const metrics = (await h.app.inject({ method: 'GET', url: '/metrics' })).body;
  expect(metrics).toContain('ferry_storage_errors_total{operation="allocate",cause="full"} 1');
  expect(metrics).toContain(`ferry_errors_total{code="${Code.StorageFailure}"} 1`);
  expect(metrics).toContain('ferry_ready 0');

  h.db.pragma('max_page_count = 1073741823');
  h.db.pragma('query_only = OFF');
  expect(h.services.deps.storage.probe()).toBe(true);
  expect((await h.app.inject({ method: 'GET', url: '/readyz' })).json()).toEqual({ ready: true, phase: 'ready' });
  const again = await h.app.inject({
    method: 'POST',
    url: '/v1/allocations',
    payload: { network: 'ferry', containerId: 'after', ifName: 'eth0', netns: '/proc/self/ns/net' },
  });
  expect(again.statusCode).toBe(200);
  expect(h.db.pragma('integrity_check', { simple: true })).toBe('ok');
});

test('GC stops at a storage failure and answers it (115) instead of listing it per attachment', async (t) => {
  const h = await useApp(t);
  for (const id of ['g1', 'g2']) {
    const r = await h.app.inject({
      method: 'POST',
      url: '/v1/allocations',
      payload: { network: 'ferry', containerId: id, ifName: 'eth0', netns: '/proc/self/ns/net' },
    });
    expect(r.statusCode).toBe(200);
  }
  h.db.pragma('query_only = ON');
  const gc = await h.app.inject({ method: 'POST', url: '/v1/gc', payload: { network: 'ferry', validAttachments: [] } });
  expect(gc.statusCode).toBe(503);
  expect(gc.json()).toMatchObject({
    code: Code.StorageFailure,
    msg: `gc: ferryd cannot write its database ${h.config.database}: the filesystem is read-only (SQLITE_READONLY)`,
  });
  h.db.pragma('query_only = OFF');
});

test('a queued DEL that fails for storage waits (never set aside), and is applied once storage is back', async (t) => {
  const h = await useApp(t);
  const ok = await h.app.inject({
    method: 'POST',
    url: '/v1/allocations',
    payload: { network: 'ferry', containerId: 'q1', ifName: 'eth0', netns: '/proc/self/ns/net' },
  });
  expect(ok.statusCode).toBe(200);
  mkdirSync(h.config.deleteQueue, { recursive: true });
  const entry = `${'b'.repeat(32)}.json`;
  writeFileSync(
    join(h.config.deleteQueue, entry),
    JSON.stringify({
      version: 1,
      network: 'ferry',
      containerId: 'q1',
      ifName: 'eth0',
      netns: '',
      queuedAt: new Date(h.clock.now + 1000).toISOString(),
    }),
  );
  h.clock.now += 2000;
  // Read-only for SQLite: every write fails with SQLITE_READONLY.
  h.db.pragma('query_only = ON');
  const { drainer, storage } = { drainer: h.services.drainer, storage: h.services.deps.storage };
  // Far more passes than the set-aside limit, with the clock past every backoff.
  for (let i = 0; i < 8; i++) {
    await drainer.drain();
    h.clock.now += 120_000;
  }
  expect(readdirSync(h.config.deleteQueue)).toContain(entry);
  expect(drainer.status().failed).toEqual([]);
  expect(drainer.status().pending).toEqual([
    expect.objectContaining({
      file: entry,
      attempts: 0,
      lastError: expect.stringMatching(/^drain: ferryd cannot write its database .*\(SQLITE_READONLY\)$/),
    }),
  ]);
  expect(storage.failing).toMatchObject({ operation: 'drain', cause: 'read-only', code: 'SQLITE_READONLY' });

  h.db.pragma('query_only = OFF');
  expect(storage.probe()).toBe(true);
  await expect.poll(() => readdirSync(h.config.deleteQueue).includes(entry)).toBe(false);
  expect((await h.app.inject({ method: 'GET', url: '/v1/endpoints/q1' })).statusCode).toBe(404);
});
