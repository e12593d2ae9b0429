import { expect, test } from 'vitest';
import { ctl, printed, useFerryd } from '../testing/ferryd';

test('health: alive; --ready: ready, once start-up is done', async (t) => {
  const h = await useFerryd(t);
  expect(await ctl(h, 'health')).toEqual(printed('alive'));
  expect(await ctl(h, 'health', '--ready')).toEqual(printed('ready'));
});

test('health --ready fails (exit 1) with the reason while ferryd is starting or draining; alive all along', async (t) => {
  const h = await useFerryd(t, {}, { ready: false });
  const starting = await ctl(h, 'health', '--ready');
  expect(starting).toMatchObject({ code: 1, out: '' });
  expect(starting.err).toMatch(/^ferryctl: ferryd GET \/readyz: HTTP 503: .*ferryd is starting/);
  expect((await ctl(h, 'health')).code).toBe(0);
  h.services.deps.lifecycle.markReady();
  expect((await ctl(h, 'health', '--ready')).code).toBe(0);
  h.services.deps.lifecycle.markDraining();
  const draining = await ctl(h, 'health', '--ready');
  expect(draining.code).toBe(1);
  expect(draining.err).toContain('ferryd is draining');
});
