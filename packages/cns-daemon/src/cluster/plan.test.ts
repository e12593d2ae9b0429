import { expect, test } from 'vitest';
import { changeCount, diff } from './diff';
import type { Peer } from './peers';
import { emptyEntries, Planner, type PlanOptions, vtepMac } from './plan';

const plan = (opts: PlanOptions & { peers: readonly Peer[] }) => {
  const p = new Planner(opts);
  p.update(opts.peers);
  return p;
};

const peers = [
  { name: 'b', addresses: ['192.0.2.12', '2001:db8::12'], podCIDRs: ['10.244.2.0/24', 'fd00:10:244:2:0::/64'] },
  { name: 'c', addresses: ['192.0.2.13'], podCIDRs: ['10.244.3.0/24', 'fd00:10:244:3::/64'] },
  { name: 'd', addresses: ['192.0.2.14'], podCIDRs: ['10.244.2.0/24', '10.244.1.128/25'] },
];
const own = ['10.244.1.0/24', 'fd00:10:244:1::/64'];

test('host-gw: a route per pod CIDR via the same-family address; what cannot be routed says why', () => {
  const p = plan({ routing: 'host-gw', ownPodCIDRs: own, peers });
  expect([...p.entries.routes.values()]).toEqual([
    { dst: '10.244.2.0/24', via: '192.0.2.12', onlink: false },
    { dst: 'fd00:10:244:2::/64', via: '2001:db8::12', onlink: false },
    { dst: '10.244.3.0/24', via: '192.0.2.13', onlink: false },
  ]);
  expect(p.unroutable).toEqual([
    { peer: 'c', cidr: 'fd00:10:244:3::/64', reason: 'no IPv6 address to route it via' },
    { peer: 'd', cidr: '10.244.2.0/24', reason: 'also claimed by node b' },
    { peer: 'd', cidr: '10.244.1.128/25', reason: "overlaps this node's pod CIDRs" },
  ]);
  expect(p.entries.neighbours.size + p.entries.fdb.size).toBe(0);
  expect(plan({ routing: 'none', ownPodCIDRs: own, peers }).entries.routes.size).toBe(0);
});

test('vxlan: onlink routes via the VTEP address, a permanent neighbour per VTEP, an FDB entry per peer', () => {
  const p = plan({
    routing: 'vxlan',
    ownPodCIDRs: own,
    peers: peers.slice(0, 2),
    vxlan: { device: 'ferry.1', underlayFamily: 4 },
  });
  const macB = vtepMac('b');
  expect(p.entries.routes.get('fd00:10:244:2::/64')).toEqual({
    dst: 'fd00:10:244:2::/64',
    via: 'fd00:10:244:2::',
    dev: 'ferry.1',
    onlink: true,
  });
  expect([...p.entries.neighbours]).toEqual([
    ['10.244.2.0', macB],
    ['fd00:10:244:2::', macB],
    ['10.244.3.0', vtepMac('c')],
    ['fd00:10:244:3::', vtepMac('c')],
  ]);
  expect([...p.entries.fdb]).toEqual([
    [macB, '192.0.2.12'],
    [vtepMac('c'), '192.0.2.13'],
  ]);
  expect(p.ownerOf.get(macB)).toBe('b');
});

test('the VTEP MAC is a locally administered unicast address, the same for the same name everywhere', () => {
  expect(vtepMac('node-1')).toBe(vtepMac('node-1'));
  expect(vtepMac('node-1')).not.toBe(vtepMac('node-2'));
  const first = Number.parseInt(vtepMac('node-1').slice(0, 2), 16);
  expect(first & 0x03).toBe(0x02);
});

test('diff: equal entries are left alone, changed ones replaced, departed ones deleted', () => {
  const before = plan({ routing: 'host-gw', ownPodCIDRs: own, peers: peers.slice(0, 2) }).entries;
  const have = emptyEntries();
  for (const [k, r] of before.routes) have.routes.set(k, { ...r, dev: 'eth0' });
  expect(changeCount(diff(have, before))).toBe(0);
  const moved = [{ ...peers[0], addresses: ['192.0.2.99'] }] as typeof peers;
  const c = diff(have, plan({ routing: 'host-gw', ownPodCIDRs: own, peers: moved }).entries);
  expect(c.routes.put.map((r) => `${r.dst} via ${r.via}`)).toEqual(['10.244.2.0/24 via 192.0.2.99']);
  expect(c.routes.del.map((r) => r.dst)).toEqual(['fd00:10:244:2::/64', '10.244.3.0/24']);
});

test('a new view re-plans only the peers that changed, and one that lost a contested CIDR gets it back', () => {
  const p = new Planner({ routing: 'host-gw', ownPodCIDRs: own });
  const first = p.update(peers);
  expect(first.routes.size).toBe(3);
  expect(p.update(peers.map((x) => ({ ...x }))).routes.size).toBe(0);
  const touched = p.update([peers[1], peers[2]] as Peer[]);
  // b left: its two routes go, and d, which wanted b's 10.244.2.0/24, now gets it.
  expect([...touched.routes].sort()).toEqual(['10.244.2.0/24', 'fd00:10:244:2::/64']);
  expect(p.entries.routes.get('10.244.2.0/24')?.via).toBe('192.0.2.14');
  expect(p.ownerOf.get('10.244.2.0/24')).toBe('d');
  expect(p.unroutable.map((u) => `${u.peer} ${u.cidr}`)).toEqual(['c fd00:10:244:3::/64', 'd 10.244.1.128/25']);
});

test("a peer's address is planned as the kernel prints it, however the config wrote it", () => {
  const written = [{ name: 'e', addresses: ['2001:DB8:0:0::0012'], podCIDRs: ['fd00:10:244:5::/64'] }];
  const hostGw = plan({ routing: 'host-gw', ownPodCIDRs: own, peers: written });
  expect([...hostGw.entries.routes.values()].map((r) => r.via)).toEqual(['2001:db8::12']);
  const vxlan = plan({
    routing: 'vxlan',
    ownPodCIDRs: own,
    peers: written,
    vxlan: { device: 'ferry.1', underlayFamily: 6 },
  });
  expect([...vxlan.entries.fdb.values()]).toEqual(['2001:db8::12']);
});

test('blocks are routed as pod CIDRs; a VXLAN end is the lowest block of its family, also past a /24 held during a migration', () => {
  const withBlocks: Peer[] = [
    { name: 'b', addresses: ['192.0.2.12'], podCIDRs: [], blocks: ['10.244.9.64/26', '10.244.7.0/26'] },
    { name: 'c', addresses: ['192.0.2.13'], podCIDRs: ['10.244.3.0/24'], blocks: ['10.244.3.0/26'] },
  ];
  const hostGw = plan({ routing: 'host-gw', ownPodCIDRs: ['10.244.1.0/26'], peers: withBlocks });
  expect([...hostGw.entries.routes.keys()].sort()).toEqual([
    '10.244.3.0/24',
    '10.244.3.0/26',
    '10.244.7.0/26',
    '10.244.9.64/26',
  ]);
  const vxlan = plan({
    routing: 'vxlan',
    ownPodCIDRs: ['10.244.1.0/26'],
    peers: withBlocks,
    vxlan: { device: 'ferry.1', underlayFamily: 4 },
  });
  expect(vxlan.entries.routes.get('10.244.9.64/26')?.via).toBe('10.244.7.0');
  expect(vxlan.entries.routes.get('10.244.3.0/24')?.via).toBe('10.244.3.0');
  expect([...vxlan.entries.neighbours.keys()].sort()).toEqual(['10.244.3.0', '10.244.7.0']);
  // A peer claiming a block this node holds gets no route for it.
  const clash = plan({ routing: 'host-gw', ownPodCIDRs: ['10.244.7.0/26'], peers: withBlocks });
  expect(clash.unroutable).toEqual([{ peer: 'b', cidr: '10.244.7.0/26', reason: "overlaps this node's pod CIDRs" }]);
});
