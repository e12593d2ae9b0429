import { expect, test } from 'vitest';
import { parseAddrLinks, parseLinks, parseRoutes } from './ip';
import { NetError } from './net-error';

// What the netlink layer and `ip -j` show, with a field no schema names (kept, as the schemas are loose).
const LINK = { ifindex: 7, ifname: 'fry1a2b3c4d5e6', mtu: 1500, address: 'ee:ee:ee:ee:ee:ee', flags: ['UP'], xdp: {} };
const ADDR = { family: 'inet', local: '10.244.0.5', prefixlen: 32, scope: 'global' };
const ADDR_LINK = { ifindex: 3, ifname: 'eth0', addr_info: [ADDR] };
const ROUTE = { dst: '10.244.0.5', dev: 'fry1a2b3c4d5e6', scope: 'link', flags: [] };

test('the usual shapes are taken as they are, unknown fields kept', async () => {
  const links = [[LINK]];
  expect((await parseLinks(links, 'links'))[0]).toBe(LINK);
  expect((await parseAddrLinks([[ADDR_LINK]], 'addresses'))[0]).toBe(ADDR_LINK);
  expect((await parseRoutes([[ROUTE]], 'routes'))[0]).toBe(ROUTE);
  expect(await parseLinks([], 'links')).toEqual([]);
});

test('a show that does not fit its schema is a NetError naming what was read and the field', async () => {
  const err = await parseLinks([[{ ...LINK, ifindex: 'two' }]], 'link eth0').catch((e: unknown) => e);
  expect(err).toBeInstanceOf(NetError);
  expect((err as NetError).message).toContain('link eth0');
  expect((err as NetError).message).toContain('ifindex');
  await expect(parseRoutes([[{ dev: 'eth0' }]], 'routes')).rejects.toBeInstanceOf(NetError);
  await expect(
    parseAddrLinks([[{ ...ADDR_LINK, addr_info: [{ ...ADDR, prefixlen: '128' }] }]], 'a'),
  ).rejects.toBeInstanceOf(NetError);
});
