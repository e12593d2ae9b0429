import { expect, test } from 'vitest';
import { attach, ctl, ctlJson, queueDel, useFerryd } from '../testing/ferryd';

const line = (r: { cooledDown: number; staleReleased: number; queueApplied: number }) =>
  `cooled down: ${r.cooledDown} addresses; stale endpoints released: ${r.staleReleased}; devices refunded: 0, renamed home: 0; queued DELs applied: ${r.queueApplied}; adopted from the node: 0, released (host veth gone): 0; released after a reboot: 0\n`;

test('reconcile: one pass now, and what it did', async (t) => {
  const h = await useFerryd(t, { cooldownSec: 30, reconcile: { intervalSec: 10, staleGraceSec: 60 } });
  expect(await ctl(h, 'reconcile')).toEqual({
    code: 0,
    err: '',
    out: line({ cooledDown: 0, staleReleased: 0, queueApplied: 0 }),
  });
  await attach(h, 'queued');
  queueDel(h, 'queued', h.clock.now);
  await attach(h, 'gone', { netns: '/var/run/netns/ferry-t-never' });
  // The queued DEL is applied; the missing netns starts its grace period.
  expect((await ctl(h, 'reconcile')).out).toBe(line({ cooledDown: 0, staleReleased: 0, queueApplied: 1 }));
  h.clock.now += 60_000;
  // Past the grace period the endpoint goes; the queued DEL's two addresses have cooled down meanwhile.
  expect((await ctl(h, 'reconcile')).out).toBe(line({ cooledDown: 2, staleReleased: 1, queueApplied: 0 }));
  h.clock.now += 30_000;
  expect(await ctlJson(h, 'reconcile')).toEqual({
    cooledDown: 2,
    staleReleased: 0,
    devicesRefunded: 0,
    devicesRenamed: 0,
    queueApplied: 0,
    adopted: 0,
    adoptedReleased: 0,
    releasedAfterReboot: 0,
  });
});
