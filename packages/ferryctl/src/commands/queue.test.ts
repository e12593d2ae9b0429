import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { answerOf, attach, ctl, ctlJson, printed, queueDel, queueEntryText, useFerryd } from '../testing/ferryd';

test('queue: pending DELs with their attachment and age; nothing pending says so', async (t) => {
  const h = await useFerryd(t);
  const dir = h.config.deleteQueue;
  expect(await ctl(h, 'queue')).toEqual(printed(`queue ${dir}: 0 pending (oldest 0 s), 0 set aside`));
  await attach(h, 'c1');
  const queuedAt = h.clock.now;
  const file = queueDel(h, 'c1', queuedAt);
  h.clock.now += 42_000;
  const r = await ctl(h, 'queue');
  expect(r).toEqual(
    printed(
      `queue ${dir}: 1 pending (oldest 42 s), 0 set aside`,
      '',
      'PENDING                                CONTAINER  IFNAME  QUEUED-AT                 ATTEMPTS  LAST-ERROR',
      `${file}  c1         eth0    ${new Date(queuedAt).toISOString()}  0         -`,
    ),
  );
  expect(await ctl(h, 'queue', 'list')).toEqual(r);
  expect(await ctlJson(h, 'queue')).toEqual(await answerOf(h, '/v1/operator/queue'));
});

test('queue: a set-aside entry is listed with its reason; retried once fixed, it is applied', async (t) => {
  const h = await useFerryd(t);
  await attach(h, 'c1');
  const name = queueDel(h, 'c1', h.clock.now, '{"version": 1');
  expect((await ctl(h, 'reconcile')).code).toBe(0);
  const status = (await ctlJson(h, 'queue')) as { failed: { file: string; reason: string }[] };
  expect(status.failed).toEqual([
    expect.objectContaining({ originalName: name, reason: expect.stringMatching(/^not JSON: /) }),
  ]);
  const id = status.failed[0]?.file ?? '';
  const r = await ctl(h, 'queue');
  expect(r.code).toBe(0);
  expect(r.out.split('\n')).toEqual([
    `queue ${h.config.deleteQueue}: 0 pending (oldest 0 s), 1 set aside`,
    '',
    expect.stringMatching(/^FAILED +ORIGINAL-NAME +MOVED-AT +REASON$/),
    expect.stringMatching(new RegExp(`^${id}  "${name}"  ${new Date(h.clock.now).toISOString()}  not JSON: `)),
    '',
  ]);
  // The operator fixes the entry where it was set aside, then puts it back: it is applied at once.
  queueDel(h, 'c1', h.clock.now);
  writeFileSync(join(h.config.deleteQueue, 'failed', id), queueEntryText('c1', h.clock.now));
  // A newer DEL of the same attachment is pending: that one is applied instead, and retry says so.
  const newer = await ctl(h, 'queue', 'retry', id);
  expect(newer.code).toBe(1);
  expect(newer.err).toContain('a newer DEL of the same attachment is pending');
  expect((await ctl(h, 'reconcile')).code).toBe(0);
  const retried = await ctl(h, 'queue', 'retry', id);
  expect(retried).toEqual(printed(`queue ${h.config.deleteQueue}: 0 pending (oldest 0 s), 0 set aside`));
  expect((await ctl(h, 'endpoints', 'show', 'c1')).code).toBe(1);
});

test('queue retry: an unknown file is 1; no file, or an unknown subcommand, is usage', async (t) => {
  const h = await useFerryd(t);
  const unknown = await ctl(h, 'queue', 'retry', 'f'.repeat(64));
  expect(unknown).toEqual({ code: 1, out: '', err: `ferryctl: delete queue: no failed entry ${'f'.repeat(64)}\n` });
  const none = await ctl(h, 'queue', 'retry');
  expect(none.code).toBe(2);
  expect(none.err).toMatch(/^ferryctl: queue retry needs the file name shown under FAILED/);
  const sub = await ctl(h, 'queue', 'flush');
  expect(sub.code).toBe(2);
  expect(sub.err).toMatch(/^ferryctl: unknown queue subcommand "flush"/);
});
