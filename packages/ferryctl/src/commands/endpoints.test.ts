import { expect, test } from 'vitest';
import { answerOf, attach, ctl, ctlJson, expectListing, printed, useFerryd } from '../testing/ferryd';

const LONG_ID = 'a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2';

test('endpoints: one row per interface, the container ID shortened, the pod when known', async (t) => {
  const h = await useFerryd(t);
  await attach(h, 'c1', { pod: { namespace: 'shop', name: 'web-0' } });
  await attach(h, LONG_ID, { commit: false });
  await expectListing(
    h,
    { args: ['endpoints'], alias: ['endpoints', 'list'], url: '/v1/operator/endpoints' },
    `
CONTAINER      POD         IFNAME  NIC       ADDRESSES                           STATE      NETWORK
c1             shop/web-0  eth0    InfraNIC  10.244.1.1/32,fd00:10:244:1::1/128  committed  ferry
a1b2c3d4e5f6a  -           eth0    InfraNIC  10.244.1.2/32,fd00:10:244:1::2/128  allocated  ferry
`,
  );
});

test('endpoints filters by namespace, pod, network and NIC type', async (t) => {
  const h = await useFerryd(t);
  await attach(h, 'c1', { pod: { namespace: 'shop', name: 'web-0' } });
  await attach(h, 'c2', { pod: { namespace: 'shop', name: 'web-1' } });
  await attach(h, 'c3', { pod: { namespace: 'kube-system', name: 'dns-0' } });
  const ids = async (...flags: string[]) =>
    ((await ctlJson(h, 'endpoints', ...flags)) as { endpoints: { containerId: string }[] }).endpoints.map(
      (e) => e.containerId,
    );
  expect(await ids('--namespace', 'shop')).toEqual(['c1', 'c2']);
  expect(await ids('--namespace', 'shop', '--pod', 'web-1')).toEqual(['c2']);
  expect(await ids('--network', 'ferry')).toEqual(['c1', 'c2', 'c3']);
  expect(await ids('--network', 'other')).toEqual([]);
  expect(await ids('--nic-type', 'DelegatedNIC')).toEqual([]);
  expect(await ids('--nic-type', 'InfraNIC')).toEqual(['c1', 'c2', 'c3']);
  // ferryd checks the filter: a NIC type it does not know is its error, exit 1.
  const bad = await ctl(h, 'endpoints', '--nic-type', 'BackendNIC');
  expect(bad.code).toBe(1);
  expect(bad.err).toMatch(/^ferryctl: invalid request querystring: nicType: /);
});

test('endpoints show: every interface of one container, with its MAC, host side and netns', async (t) => {
  const h = await useFerryd(t);
  const a = await attach(h, 'c1');
  const veth = a.nics[0]?.nicType === 'InfraNIC' ? a.nics[0].hostVethName : '';
  const r = await ctl(h, 'endpoints', 'show', 'c1');
  expect(r).toEqual(
    printed(
      'IFNAME  NIC       ENDPOINT-ID  NETWORK  ADDRESSES                           MAC                HOST-SIDE        NETNS',
      `eth0    InfraNIC  c1           ferry    10.244.1.1/32,fd00:10:244:1::1/128  0a:58:0a:f4:01:01  ${veth}  /proc/self/ns/net`,
    ),
  );
  expect(await ctlJson(h, 'endpoints', 'show', 'c1')).toEqual(await answerOf(h, '/v1/operator/endpoints/c1'));
  expect(await ctl(h, 'endpoints', 'show', 'nope')).toEqual({
    code: 1,
    out: '',
    err: 'ferryctl: endpoint nope: not found\n',
  });
});

test('endpoints delete: releases the container and says what went', async (t) => {
  const h = await useFerryd(t);
  await attach(h, 'c1');
  await attach(h, 'c2');
  const r = await ctl(h, 'endpoints', 'delete', 'c1');
  expect(r.code).toBe(0);
  expect(r.out.split('\n').slice(0, 3)).toEqual([
    'released 1 interfaces of c1',
    expect.stringMatching(/^IFNAME +NIC +ENDPOINT-ID/),
    expect.stringMatching(/^eth0 +InfraNIC +c1 +ferry +10\.244\.1\.1\/32,fd00:10:244:1::1\/128 /),
  ]);
  expect(((await ctlJson(h, 'endpoints')) as { endpoints: { containerId: string }[] }).endpoints).toEqual([
    expect.objectContaining({ containerId: 'c2' }),
  ]);
  // Nothing left to delete is still a success; --json is ferryd's answer.
  expect(await ctlJson(h, 'endpoints', 'delete', 'c1')).toEqual({ released: [] });
  expect(await ctlJson(h, 'endpoints', 'delete', 'c2')).toEqual({
    released: [expect.objectContaining({ containerId: 'c2', ifName: 'eth0', state: 'committed' })],
  });
});

test('endpoints: a missing container ID or an unknown subcommand is a usage error', async (t) => {
  const h = await useFerryd(t);
  for (const sub of ['show', 'delete']) {
    const r = await ctl(h, 'endpoints', sub);
    expect(r.code, sub).toBe(2);
    expect(r.err, sub).toMatch(new RegExp(`^ferryctl: endpoints ${sub} needs a container ID\n\nusage: `));
  }
  const r = await ctl(h, 'endpoints', 'purge');
  expect(r).toMatchObject({ code: 2, out: '' });
  expect(r.err).toMatch(/^ferryctl: unknown endpoints subcommand "purge"/);
});
