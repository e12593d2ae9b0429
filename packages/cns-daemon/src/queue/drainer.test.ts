/**
 * The drainer on real files in a temp dir and a real SQLite store (the unit harness), with the test's
 * clock: retries and their back-off, setting an entry aside after its last attempt, putting it back,
 * and the removal of temp files a shim abandoned.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, type TestContext, test } from 'vitest';
import { type Harness, useApp } from '../testing/harness';

const entryName = (containerId: string) =>
  `${createHash('sha256').update(`ferry\n${containerId}\neth0`).digest('hex').slice(0, 32)}.json`;

async function allocatedWithQueuedDel(t: TestContext): Promise<{ h: Harness; name: string }> {
  const h = await useApp(t);
  const r = await h.app.inject({
    method: 'POST',
    url: '/v1/allocations',
    payload: { network: 'ferry', containerId: 'c1', ifName: 'eth0', netns: '/proc/self/ns/net' },
  });
  expect(r.statusCode, r.body).toBe(200);
  const name = entryName('c1');
  const entry = {
    version: 1,
    network: 'ferry',
    containerId: 'c1',
    ifName: 'eth0',
    netns: '',
    queuedAt: new Date(h.clock.now).toISOString(),
  };
  writeFileSync(join(h.config.deleteQueue, name), JSON.stringify(entry));
  return { h, name };
}

/** Makes every release fail inside SQLite, as a broken store would, until `heal()`. */
function breakReleases(h: Harness): { heal(): void } {
  h.db.exec(
    `CREATE TEMP TRIGGER refuse_release BEFORE DELETE ON attachments BEGIN SELECT RAISE(ABORT, 'disk on fire'); END`,
  );
  return { heal: () => h.db.exec('DROP TRIGGER refuse_release') };
}

const endpointStatus = async (h: Harness) =>
  (await h.app.inject({ method: 'GET', url: '/v1/endpoints/c1' })).statusCode;

test('an entry that fails is retried after 1, 2, 4 and 8 s, then set aside with the reason; put back, it is applied', async (t) => {
  const { h, name } = await allocatedWithQueuedDel(t);
  const { drainer } = h.services;
  const store = breakReleases(h);
  const attempts = () => drainer.status().pending.map((p) => [p.attempts, p.lastError]);

  expect(await drainer.drain()).toEqual({ applied: 0, stale: 0, setAside: 0 });
  expect(attempts()).toEqual([[1, 'disk on fire']]);
  for (const [n, backoffMs] of [1000, 2000, 4000, 8000].entries()) {
    // Not before its back-off is over…
    h.clock.now += backoffMs - 1;
    await drainer.drain();
    expect(attempts(), `attempt ${n + 2} early`).toEqual([[n + 1, 'disk on fire']]);
    // …and at once after.
    h.clock.now += 1;
    const r = await drainer.drain();
    if (n < 3) expect(attempts(), `attempt ${n + 2}`).toEqual([[n + 2, 'disk on fire']]);
    else expect(r).toEqual({ applied: 0, stale: 0, setAside: 1 });
  }
  const status = drainer.status();
  expect(status.pending).toEqual([]);
  expect(status.failed).toEqual([
    {
      file: createHash('sha256').update(name).digest('hex'),
      originalName: name,
      reason: 'could not apply after 5 attempts: disk on fire',
      movedAt: new Date(h.clock.now).toISOString(),
    },
  ]);
  expect(readdirSync(h.config.deleteQueue).sort()).toEqual(['failed']);
  expect(await endpointStatus(h)).toBe(200);

  // The operator fixes the cause and puts the entry back: it is applied under its own name.
  store.heal();
  drainer.retryFailed(status.failed[0]?.file ?? '');
  await drainer.drain();
  expect(drainer.status()).toMatchObject({ pending: [], failed: [] });
  expect(await endpointStatus(h)).toBe(404);
});

test('an entry that failed once is applied at its next attempt when the cause is gone', async (t) => {
  const { h } = await allocatedWithQueuedDel(t);
  const store = breakReleases(h);
  await h.services.drainer.drain();
  store.heal();
  h.clock.now += 1000;
  expect(await h.services.drainer.drain()).toEqual({ applied: 1, stale: 0, setAside: 0 });
  expect(h.services.drainer.status().pending).toEqual([]);
  expect(await endpointStatus(h)).toBe(404);
});

test("a shim's temp file is removed once it is a minute old (its shim died mid-write), not before", async (t) => {
  const h = await useApp(t);
  const q = h.config.deleteQueue;
  const at = (ageMs: number) => new Date(h.clock.now - ageMs);
  writeFileSync(join(q, '.tmp-abandoned'), '{"version":');
  utimesSync(join(q, '.tmp-abandoned'), at(60_001), at(60_001));
  writeFileSync(join(q, '.tmp-being-written'), '{"version":');
  utimesSync(join(q, '.tmp-being-written'), at(59_000), at(59_000));

  expect(await h.services.drainer.drain()).toEqual({ applied: 0, stale: 0, setAside: 0 });
  expect(existsSync(join(q, '.tmp-abandoned'))).toBe(false);
  expect(existsSync(join(q, '.tmp-being-written'))).toBe(true);
  h.clock.now += 1001;
  await h.services.drainer.drain();
  expect(readdirSync(q)).toEqual([]);
  // Temp files are never set aside as strangers.
  expect(h.services.drainer.status().failed).toEqual([]);
});
