import { expect, test } from 'vitest';
import { answerOf, attach, ctl, ctlJson, expectListing, printed, useFerryd } from '../testing/ferryd';

const SMALL = {
  cooldownSec: 30,
  networks: [{ name: 'ferry', ipv4: { subnet: '10.9.0.0/29' }, ipv6: { subnet: 'fd00:9::/64' } }],
};

test('ipam: every pool with its size, assigned, cooling-down and free counts and the cooldown', async (t) => {
  const h = await useFerryd(t, SMALL);
  await attach(h, 'c1');
  await attach(h, 'c2');
  await h.app.inject({ method: 'DELETE', url: '/v1/endpoints/c2?network=ferry&ifName=eth0' });
  await expectListing(
    h,
    { args: ['ipam'], alias: ['ipam', 'pools'], url: '/v1/operator/pools' },
    `
NETWORK  FAMILY  SUBNET       SIZE                  ASSIGNED  COOLING  FREE                  COOLDOWN
ferry    IPv4    10.9.0.0/29  6                     1         1        4                     30s
ferry    IPv6    fd00:9::/64  18446744073709551615  1         1        18446744073709551613  30s
`,
  );
});

test('ipam addresses: each held address with its holder, since when, and when a cooling one is free', async (t) => {
  const h = await useFerryd(t, SMALL);
  const t0 = new Date(h.clock.now).toISOString();
  await attach(h, 'c1');
  h.clock.now += 1_000;
  await attach(h, 'c2');
  await h.app.inject({ method: 'DELETE', url: '/v1/endpoints/c2?network=ferry&ifName=eth0' });
  const t1 = new Date(h.clock.now).toISOString();
  const free = new Date(h.clock.now + 30_000).toISOString();
  const r = await ctl(h, 'ipam', 'addresses', '--state', 'PendingRelease');
  expect(r).toEqual(
    printed(
      'ADDRESS    STATE           CONTAINER  IFNAME  SINCE                     AVAILABLE-AT',
      `10.9.0.2   PendingRelease  -          -       ${t1}  ${free}`,
      `fd00:9::2  PendingRelease  -          -       ${t1}  ${free}`,
    ),
  );
  const all = await ctl(h, 'ipam', 'addresses');
  expect(all.out.split('\n').filter((l) => l.includes(' c1 '))).toEqual([
    `10.9.0.1   Assigned        c1         eth0    ${t0}  -`,
    `fd00:9::1  Assigned        c1         eth0    ${t0}  -`,
  ]);
  expect(await ctlJson(h, 'ipam', 'addresses', '--network', 'ferry', '--state', 'Assigned')).toEqual(
    await answerOf(h, '/v1/operator/addresses?network=ferry&state=Assigned'),
  );
  // ferryd checks the state it is asked for.
  expect((await ctl(h, 'ipam', 'addresses', '--state', 'Available')).code).toBe(1);
});

test('ipam: an unknown subcommand is a usage error', async (t) => {
  const h = await useFerryd(t);
  const r = await ctl(h, 'ipam', 'leases');
  expect(r).toMatchObject({ code: 2, out: '' });
  expect(r.err).toMatch(/^ferryctl: unknown ipam subcommand "leases"/);
});
