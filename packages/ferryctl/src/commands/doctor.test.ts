import { expect, test } from 'vitest';
import { attach, ctl, ctlJson, printed, useFerryd } from '../testing/ferryd';

test('doctor: exit 0 when every invariant holds', async (t) => {
  const h = await useFerryd(t);
  await attach(h, 'c1');
  expect(await ctl(h, 'doctor')).toEqual(printed('ok: every invariant holds'));
  expect(await ctlJson(h, 'doctor')).toEqual({ ok: true, violations: [] });
});

test('doctor: each violation in a table, and exit 1, with --json too', async (t) => {
  const h = await useFerryd(t);
  await attach(h, 'c1', { netns: '/var/run/netns/ferry-t-never' });
  const r = await ctl(h, 'doctor');
  expect(r).toEqual({
    code: 1,
    err: '',
    out: [
      'VIOLATION      SUBJECT  DETAIL',
      'netns-missing  c1/eth0  netns /var/run/netns/ferry-t-never is gone',
      '',
      '1 violations',
      '',
    ].join('\n'),
  });
  const json = await ctl(h, 'doctor', '--json');
  expect(json.code).toBe(1);
  expect(JSON.parse(json.out)).toEqual({
    ok: false,
    violations: [{ kind: 'netns-missing', subject: 'c1/eth0', msg: 'netns /var/run/netns/ferry-t-never is gone' }],
  });
});
