import { existsSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Allocation } from '@ferry/shared-types/api/allocations';
import type { Endpoint } from '@ferry/shared-types/api/endpoints';
import { expect, test } from 'vitest';
import { type Harness, useApp } from '../testing/harness';
import { entryFileNameOf } from './host-veth';

const journalOf = (h: Harness) => join(h.dir, 'commit-journal');

async function allocate(h: Harness, containerId: string): Promise<Allocation> {
  const r = await h.app.inject({
    method: 'POST',
    url: '/v1/allocations',
    payload: { network: 'ferry', containerId, ifName: 'eth0', netns: '/proc/self/ns/net' },
  });
  expect(r.statusCode, r.body).toBe(200);
  return r.json();
}

/** What the shim writes after building the InfraNIC of `a`, under the attachment's own name unless told. */
function writeEntry(
  h: Harness,
  a: Allocation,
  writtenAtMs: number,
  name = entryFileNameOf(a.network, a.containerId, a.ifName),
): string {
  const entry = {
    version: 1,
    containerId: a.containerId,
    writtenAt: new Date(writtenAtMs).toISOString(),
    network: a.network,
    ifName: a.ifName,
    generation: a.generation,
    nics: [{ ifName: a.ifName, mac: '02:00:00:00:00:0a', containerIfIndex: 7 }],
  };
  writeFileSync(join(journalOf(h), name), JSON.stringify(entry));
  return name;
}

async function endpoint(h: Harness, containerId: string): Promise<Endpoint> {
  const r = await h.app.inject({ method: 'GET', url: `/v1/endpoints/${containerId}` });
  expect(r.statusCode, r.body).toBe(200);
  return r.json();
}

test('ferryd creates the journal; an entry is a commit once anything reads the attachment, and is removed', async (t) => {
  const h = await useApp(t);
  expect(existsSync(journalOf(h))).toBe(true);
  const a = await allocate(h, 'c1');
  const writtenAt = h.clock.now + 1000;
  writeEntry(h, a, writtenAt);
  h.clock.now += 60_000;
  const [rec] = (await endpoint(h, 'c1')).interfaces;
  expect(rec).toMatchObject({ state: 'committed', mac: '02:00:00:00:00:0a', containerIfIndex: 7 });
  // The shim's time, not the promotion's: a DEL queued in between still applies.
  expect(rec?.updatedAt).toBe(new Date(writtenAt).toISOString());
  expect(readdirSync(journalOf(h))).toEqual([]);
  const metrics = (await h.app.inject({ method: 'GET', url: '/metrics' })).body;
  expect(metrics).toContain('ferry_commit_journal_entries_total{outcome="promoted"} 1');
});

test('a repeated allocation of a journaled attachment is refused (105), and the promotion stays', async (t) => {
  const h = await useApp(t);
  const a = await allocate(h, 'c1');
  // The first answer's settling of the rest has run: only the repeated allocation can promote the entry.
  await new Promise((r) => setImmediate(r));
  writeEntry(h, a, h.clock.now);
  const again = await h.app.inject({
    method: 'POST',
    url: '/v1/allocations',
    payload: { network: 'ferry', containerId: 'c1', ifName: 'eth0', netns: '/proc/self/ns/net' },
  });
  expect(again.statusCode).toBe(409);
  expect(again.json()).toMatchObject({ code: 105 });
  // The 105 rolled back the allocation's own savepoint, not the promotion before it.
  expect((await endpoint(h, 'c1')).interfaces[0]?.state).toBe('committed');
});

test('a DEL queued after the ADD wrote its entry releases the attachment even when drained first', async (t) => {
  const h = await useApp(t);
  const a = await allocate(h, 'c1');
  writeEntry(h, a, h.clock.now + 1000);
  writeFileSync(
    join(h.config.deleteQueue, `${'b'.repeat(32)}.json`),
    JSON.stringify({
      version: 1,
      network: 'ferry',
      containerId: 'c1',
      ifName: 'eth0',
      netns: '',
      queuedAt: new Date(h.clock.now + 2000).toISOString(),
    }),
  );
  h.clock.now += 60_000;
  expect(await h.services.drainer.drain()).toMatchObject({ applied: 1, stale: 0 });
  expect((await h.app.inject({ method: 'GET', url: '/v1/endpoints/c1' })).statusCode).toBe(404);
  expect(readdirSync(journalOf(h))).toEqual([]);
});

test('entries that cannot be commits are discarded: stale generation, released, invalid, foreign', async (t) => {
  const h = await useApp(t);
  const a = await allocate(h, 'c1');
  writeEntry(h, { ...a, generation: a.generation + 1 }, h.clock.now, `${'1'.repeat(32)}.json`);
  writeEntry(h, { ...a, containerId: 'gone' }, h.clock.now, `${'2'.repeat(32)}.json`);
  writeFileSync(join(journalOf(h), `${'3'.repeat(32)}.json`), '{"version": 1');
  writeFileSync(join(journalOf(h), 'notes.txt'), 'hello');
  const young = join(journalOf(h), '.tmp-young');
  const old = join(journalOf(h), '.tmp-old');
  writeFileSync(young, '{}');
  writeFileSync(old, '{}');
  const longAgo = (h.clock.now - 3_600_000) / 1000;
  utimesSync(old, longAgo, longAgo);

  expect(h.services.deps.attachments.settleJournal()).toEqual({ promoted: 0, discarded: 4 });
  expect((await endpoint(h, 'c1')).interfaces[0]?.state).toBe('allocated');
  // A temp file is a shim's write in progress, unless it is old enough to be abandoned.
  expect(readdirSync(journalOf(h))).toEqual(['.tmp-young']);
  const metrics = (await h.app.inject({ method: 'GET', url: '/metrics' })).body;
  expect(metrics).toContain('ferry_commit_journal_entries_total{outcome="discarded"} 4');
  expect(metrics).toContain('ferry_commit_journal_entries_total{outcome="promoted"} 0');
});

test('settling inside a transaction is refused: the files would go before the commit is durable', async (t) => {
  const h = await useApp(t);
  const a = await allocate(h, 'c1');
  writeEntry(h, a, h.clock.now);
  const settle = h.db.transaction(() => h.services.deps.attachments.settleJournal());
  expect(() => settle()).toThrow(/inside a transaction/);
  expect(readdirSync(journalOf(h))).toHaveLength(1);
});

test("an allocation settles its own attachment's entry first, the others' once it has answered", async (t) => {
  const h = await useApp(t);
  const a = await allocate(h, 'c1');
  await new Promise((r) => setImmediate(r));
  const other = writeEntry(h, a, h.clock.now);
  // A stale entry under c2's own name: settled before c2 is allocated, so it cannot be promoted (c2 is new).
  writeEntry(h, { ...a, containerId: 'c2' }, h.clock.now);
  const c2 = await allocate(h, 'c2');
  expect(readdirSync(journalOf(h))).toEqual([other]);
  // c2's shim writes its entry once it has the answer, before ferryd's next turn (a loaded node).
  const own = writeEntry(h, c2, h.clock.now);
  // No request since: the allocation's own settling of the rest promotes c1's, and only what was there
  // when it answered: c2's entry waits for the next request, however the two processes were scheduled.
  await new Promise((r) => setImmediate(r));
  expect(readdirSync(journalOf(h))).toEqual([own]);
  expect((await endpoint(h, 'c2')).interfaces[0]?.state).toBe('committed');
  expect(readdirSync(journalOf(h))).toEqual([]);
  const metrics = (await h.app.inject({ method: 'GET', url: '/metrics' })).body;
  expect(metrics).toContain('ferry_commit_journal_entries_total{outcome="promoted"} 2');
  expect(metrics).toContain('ferry_commit_journal_entries_total{outcome="discarded"} 1');
});
