import { expect, test } from 'vitest';
import { acceptLinks } from './ip';
import { IpLinkListSchema } from './schemas';

const LINK = {
  ifindex: 2,
  ifname: 'eth0',
  flags: ['BROADCAST', 'UP', 'LOWER_UP'],
  mtu: 1500,
  operstate: 'UP',
  group: 'default',
  link_type: 'ether',
  address: '02:42:0a:f4:00:05',
  linkinfo: { info_kind: 'veth', info_data: {} },
  extra: { kept: true },
};

/** One field changed or removed at a time, plus whole-document oddities. */
const DOCS: unknown[] = [
  [],
  [LINK],
  [{ ifindex: 1, ifname: 'lo' }, LINK],
  'not a list',
  [null],
  [[LINK]],
  ...Object.keys(LINK).flatMap((key) => {
    const { [key]: _, ...without } = LINK as Record<string, unknown>;
    return [
      [without],
      ...[null, 1, Number.NaN, 'x', [], ['x'], [1], {}, { info_kind: 1 }, true].map((v) => [{ ...LINK, [key]: v }]),
    ];
  }),
];

test('whatever acceptLinks takes, IpLinkListSchema takes with the same result; the usual shapes are taken', () => {
  expect(acceptLinks([LINK])).toEqual(IpLinkListSchema.parse([LINK]));
  expect(acceptLinks([{ ifindex: 1, ifname: 'lo', flags: ['UP', 'LOWER_UP'] }])).toBeDefined();
  let refused = 0;
  for (const doc of DOCS) {
    const fast = acceptLinks(doc);
    if (fast === undefined) {
      refused++;
      continue;
    }
    const oracle = IpLinkListSchema.safeParse(doc);
    expect(oracle.success, JSON.stringify(doc)).toBe(true);
    expect(fast).toEqual(oracle.data);
  }
  expect(refused).toBeGreaterThan(30);
});
