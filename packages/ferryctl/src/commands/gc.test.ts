import { expect, test } from 'vitest';
import { attach, ctl, ctlJson, printed, useFerryd } from '../testing/ferryd';

const GONE = '/var/run/netns/ferry-t-never';

test('gc: a dry run lists endpoints whose netns is gone; --apply releases them', async (t) => {
  const h = await useFerryd(t);
  expect(await ctl(h, 'gc')).toEqual(printed('nothing to collect'));
  await attach(h, 'alive');
  await attach(h, 'gone', { netns: GONE });
  const dry = await ctl(h, 'gc');
  expect(dry).toEqual(
    printed(
      'CONTAINER  IFNAME  NETWORK  REASON         NETNS',
      `gone       eth0    ferry    netns-missing  ${GONE}`,
      '',
      'dry run: 1 would be released; run again with --apply',
    ),
  );
  expect(((await ctlJson(h, 'endpoints')) as { endpoints: unknown[] }).endpoints).toHaveLength(2);
  const applied = await ctl(h, 'gc', '--apply');
  expect(applied.code).toBe(0);
  expect(applied.out.split('\n').slice(-3)).toEqual(['', 'released 1', '']);
  expect(await ctl(h, 'gc')).toEqual(printed('nothing to collect'));
  expect((await ctl(h, 'endpoints', 'show', 'alive')).code).toBe(0);
});

test('gc --keep: every container not kept is a candidate; --network scopes it; --json is the answer', async (t) => {
  const h = await useFerryd(t);
  await attach(h, 'a');
  await attach(h, 'b');
  await attach(h, 'c');
  expect(await ctlJson(h, 'gc', '--keep', 'a,c')).toEqual({
    applied: false,
    candidates: [
      { containerId: 'b', ifName: 'eth0', network: 'ferry', netns: '/proc/self/ns/net', reason: 'not-kept' },
    ],
  });
  expect(await ctlJson(h, 'gc', '--keep', 'a', '--network', 'other')).toEqual({ applied: false, candidates: [] });
  const applied = (await ctlJson(h, 'gc', '--keep', 'a', '--apply')) as {
    applied: boolean;
    candidates: { containerId: string }[];
  };
  expect(applied.applied).toBe(true);
  expect(applied.candidates.map((c) => c.containerId)).toEqual(['b', 'c']);
  expect(
    ((await ctlJson(h, 'endpoints')) as { endpoints: { containerId: string }[] }).endpoints.map((e) => e.containerId),
  ).toEqual(['a']);
});
