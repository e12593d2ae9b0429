import { expect, test } from 'vitest';
import { answerOf, ctl, ctlJson, useFerryd } from '../testing/ferryd';

test('nodes: without cluster networking ferryd says so, exit 1', async (t) => {
  const h = await useFerryd(t);
  expect(await ctl(h, 'nodes')).toEqual({
    code: 1,
    out: '',
    err: 'ferryctl: cluster networking is not configured (no `cluster` in the config)\n',
  });
});

test('nodes: the routing mode, the peer source and the last sync, then the peers', async (t) => {
  // routing none: ferryd reads no routes of the machine it runs on.
  const h = await useFerryd(t, {
    cluster: {
      nodeName: 'node-a',
      routing: 'none',
      peers: [{ name: 'node-b', addresses: ['192.0.2.12'], podCIDRs: ['10.244.2.0/24'] }],
    },
  });
  const r = await ctl(h, 'nodes');
  expect(r.code).toBe(0);
  expect(r.err).toBe('');
  const [head, sync, ...rest] = r.out.split('\n');
  expect(head).toMatch(/^node node-a: routing none \(routes carry proto \d+\); peers from static, last view /);
  expect(sync).toMatch(/^last sync never \(0 syncs, 0 failed, 0 changes in 0\.0 ms\)$/);
  expect(rest).toContain('PEER  ADDRESSES  POD-CIDRS  STATE  ENTRY  ENTRY-STATE');
  expect(await ctlJson(h, 'nodes')).toEqual(await answerOf(h, '/v1/operator/nodes'));
  const sub = await ctl(h, 'nodes', 'add');
  expect(sub.code).toBe(2);
  expect(sub.err).toMatch(/^ferryctl: unknown nodes subcommand "add"/);
});
