import { expect, test } from 'vitest';
import type * as z from 'zod/mini';
import { acceptAddrLinks, acceptLinks, acceptRoutes } from './ip';
import { IpAddrListSchema, IpLinkListSchema, IpRouteListSchema } from './schemas';

const LINK = {
  ifindex: 2,
  ifname: 'eth0',
  flags: ['BROADCAST', 'UP', 'LOWER_UP'],
  mtu: 1500,
  operstate: 'UP',
  group: 'default',
  link_type: 'ether',
  address: '02:42:0a:f4:00:05',
  linkinfo: { info_kind: 'vxlan', info_data: { id: 1, port: 8472, local: '192.0.2.1', learning: false } },
  extra: { kept: true },
};
const ADDR = { family: 'inet6', local: 'fd00::5', prefixlen: 128, scope: 'global', nodad: true };
const ADDR_LINK = { ifindex: 2, ifname: 'eth0', address: '02:42:0a:f4:00:05', flags: ['UP'], addr_info: [ADDR] };
const ROUTE = {
  dst: 'default',
  gateway: '169.254.1.1',
  dev: 'eth0',
  table: 'main',
  type: 'unicast',
  scope: 'global',
  protocol: 'boot',
  pref: 'medium',
  flags: [],
};
const VALUES: unknown[] = [null, 1, Number.NaN, 'x', [], ['x'], [1], {}, { info_kind: 1 }, [{}], [ADDR], true];

/** The item, then with each of its keys (and each key of its first nested list item) removed or replaced. */
function mutations(item: Record<string, unknown>): unknown[] {
  const out: unknown[] = [[], [item], 'not a list', [null], [[item]]];
  for (const key of Object.keys(item)) {
    const { [key]: _, ...without } = item;
    out.push([without], ...VALUES.map((v) => [{ ...item, [key]: v }]));
    const nested = item[key];
    if (Array.isArray(nested) && typeof nested[0] === 'object' && nested[0] !== null) {
      for (const m of mutations(nested[0] as Record<string, unknown>)) {
        if (Array.isArray(m)) out.push([{ ...item, [key]: m }]);
      }
    } else if (typeof nested === 'object' && nested !== null && !Array.isArray(nested)) {
      // A nested object (linkinfo, its info_data): each of its one-field variants in place.
      for (const m of mutations(nested as Record<string, unknown>)) {
        if (Array.isArray(m) && m.length === 1) out.push([{ ...item, [key]: m[0] }]);
      }
    }
  }
  return out;
}

function holdToSchema<T>(
  name: string,
  item: Record<string, unknown>,
  accept: (d: unknown) => T[] | undefined,
  schema: z.ZodMiniType<T[]>,
) {
  test(`${name}: whatever the hand check takes, the schema takes with the same result; the usual shape is taken`, () => {
    expect(accept([item])).toEqual(schema.parse([item]));
    let refused = 0;
    for (const doc of mutations(item)) {
      const fast = accept(doc);
      if (fast === undefined) {
        refused++;
        continue;
      }
      const oracle = schema.safeParse(doc);
      expect(oracle.success, JSON.stringify(doc)).toBe(true);
      expect(fast).toEqual(oracle.data);
    }
    expect(refused).toBeGreaterThan(20);
  });
}

holdToSchema('links', LINK, acceptLinks, IpLinkListSchema);
holdToSchema('addresses', ADDR_LINK, acceptAddrLinks, IpAddrListSchema);
holdToSchema('routes', ROUTE, acceptRoutes, IpRouteListSchema);
