import { expect, test } from 'vitest';
import { ctl, useFerryd } from '../testing/ferryd';

test('blocks: without cluster IPAM ferryd says so, exit 0; an unknown subcommand is a usage error', async (t) => {
  const h = await useFerryd(t);
  expect(await ctl(h, 'blocks')).toEqual({
    code: 0,
    out: 'no network pool is a range split into blocks (cluster IPAM is off)\n',
    err: '',
  });
  expect(JSON.parse((await ctl(h, 'blocks', '--json')).out)).toEqual({ isEnabled: false, ranges: [] });
  const sub = await ctl(h, 'blocks', 'claim');
  expect(sub.code).toBe(2);
  expect(sub.err).toMatch(/^ferryctl: unknown blocks subcommand "claim"/);
});
