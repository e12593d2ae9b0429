/**
 * The adoption decision as a pure function: a node reading and the database's facts, as plain data, in;
 * the plan Attachments.adopt writes, and what to log, out. Nothing is read or written.
 */
import type { IpLink } from '@ferry/net';
import { markerOf } from '@ferry/shared-types/link-marker';
import { expect, test } from 'vitest';
import type { NetworkPools } from '../ipam/ipam';
import { poolSpecsOf } from '../ipam/pool';
import type { DeviceRow } from '../store/rows';
import { testConfig } from '../testing/harness';
import { type AdoptionFacts, decideAdoption } from './adoption-decision';
import type { HostVethSeen, NodeReading, SecondarySeen } from './node-reading';

const config = testConfig('/nonexistent', {
  networks: [
    { name: 'ferry', ipv4: { subnet: '10.244.1.0/24' } },
    { name: 'sriov', infraNIC: false, ipv4: { subnet: '192.168.50.0/24' } },
  ],
});
const networks: NetworkPools[] = config.networks.map((net, k) => ({
  config: net,
  pools: poolSpecsOf(net).map((spec) => ({ spec, poolId: k + 1 })),
  routesJson: `["routes of ${net.name}"]`,
}));
const FERRY_POOL = networks[0]?.pools[0] as NetworkPools['pools'][number];
const MAC = '02:fe:00:00:00:01';

const deviceRow = (over: Partial<DeviceRow> = {}): DeviceRow => ({
  id: MAC,
  mac: MAC,
  grp: 'frontend',
  host_if_name: 'eth1',
  present: 0,
  interface_id: null,
  reserved_namespace: null,
  reserved_pod: null,
  reserved_if_name: null,
  reserved_json: null,
  seen_at_ms: null,
  ...over,
});

/** The database as plain data: held attachments, device rows, who holds which pool address. */
function factsOf(db: {
  held?: Record<string, { generation: number; interfaceIds: number[] }>;
  devices?: DeviceRow[];
  holders?: Record<string, number>;
  otherIfNames?: string[];
}): AdoptionFacts {
  return {
    networks,
    held: (containerId, ifName) => db.held?.[`${containerId}/${ifName}`],
    otherIfNames: () => db.otherIfNames ?? [],
    device: (mac) => db.devices?.find((d) => d.mac === mac),
    holderOf: (poolId, address) => db.holders?.[`${poolId} ${address}`],
  };
}

const veth = (containerId: string, generation: number, last: number, podLinks: IpLink[] = []): HostVethSeen => ({
  veth: `fer${containerId}`,
  generation,
  network: 'ferry',
  containerId,
  ifName: 'eth0',
  netns: `/var/run/netns/${containerId}`,
  addresses: [{ spec: FERRY_POOL.spec, poolId: FERRY_POOL.poolId, address: `10.244.1.${last}` }],
  podLinks: [
    { ifindex: 2, ifname: 'eth0', address: `0a:58:0a:f4:01:0${last}`, linkinfo: { info_kind: 'veth' } },
    ...podLinks,
  ],
  inSameNetns: 1,
});

const reading = (
  hostVeths: HostVethSeen[],
  secondaries: SecondarySeen[] = [],
  nodeMacs: string[] = [],
): NodeReading => ({
  hostVeths,
  secondaries,
  nodeMacs: new Set(nodeMacs),
  nodeNames: new Set(['lo', 'eth1x']),
  maxGeneration: Math.max(0, ...hostVeths.map((h) => h.generation), ...secondaries.map((s) => s.key.generation)),
});

const device = (mac = MAC, attachment = 'eth0'): IpLink => ({
  ifindex: 7,
  ifname: 'net1',
  address: mac,
  ifalias: markerOf('eth1', attachment),
});

test('a host veth the database lacks: its InfraNIC with the routed pool addresses, its device, the sequence above its generation', () => {
  const d = decideAdoption(reading([veth('a', 7, 1, [device()])]), factsOf({ devices: [deviceRow()] }), 1000);
  expect(d.plan).toEqual({
    generationsAbove: 7,
    releasedSinceMs: 1000,
    attachments: [
      {
        network: 'ferry',
        containerId: 'a',
        ifName: 'eth0',
        netns: '/var/run/netns/a',
        generation: 7,
        interfaces: [
          {
            ifName: 'eth0',
            nicType: 'InfraNIC',
            routesJson: '["routes of ferry"]',
            hostVethName: 'fera',
            shown: { mac: '0a:58:0a:f4:01:01', ifIndex: 2 },
            addresses: [{ poolId: 1, address: '10.244.1.1' }],
          },
          {
            ifName: 'net1',
            nicType: 'DelegatedNIC',
            routesJson: '[]',
            device: { id: MAC, mac: MAC, group: 'frontend', hostIfName: 'eth1', learnedHostIfName: false },
            shown: { mac: MAC, ifIndex: 7 },
            addresses: [],
          },
        ],
      },
    ],
  });
  expect(d.notes).toEqual([[]]);
});

test("the node wins an address the database gave another interface (said once); an older generation's own address and device are its to take", () => {
  const taken = decideAdoption(reading([veth('a', 5, 2)]), factsOf({ holders: { '1 10.244.1.2': 41 } }), 0);
  expect(taken.plan.attachments[0]?.interfaces[0]?.addresses).toEqual([{ poolId: 1, address: '10.244.1.2' }]);
  expect(taken.notes[0]?.map((n) => [n.msg, n.fields.fromInterface])).toEqual([
    ['address recorded for another interface is routed to this pod on the node: the node wins', 41],
  ]);
  // The database holds generation 1 of the same attachment: its interface 41 and the device it holds are freed by the write.
  const older = decideAdoption(
    reading([veth('a', 5, 2, [device()])]),
    factsOf({
      held: { 'a/eth0': { generation: 1, interfaceIds: [41, 42] } },
      holders: { '1 10.244.1.2': 41 },
      devices: [deviceRow({ interface_id: 42 })],
    }),
    0,
  );
  expect(older.notes).toEqual([[]]);
  expect(older.plan.attachments[0]?.interfaces.map((i) => i.ifName)).toEqual(['eth0', 'net1']);
  // The same or a newer generation held: nothing to do.
  const held = factsOf({ held: { 'a/eth0': { generation: 5, interfaceIds: [41] } } });
  expect(decideAdoption(reading([veth('a', 5, 2)]), held, 0).plan.attachments).toEqual([]);
});

test.for([
  ['not in the inventory', [device()], factsOf({}), []],
  ['held by another interface', [device()], factsOf({ devices: [deviceRow({ interface_id: 9 })] }), []],
  ['a device with that MAC is on the node', [device()], factsOf({ devices: [deviceRow()] }), [MAC]],
  [
    'interface name net1 is taken in the container',
    [device()],
    factsOf({ devices: [deviceRow()], otherIfNames: ['net1'] }),
    [],
  ],
  ['its name on the node is not known', [device()], factsOf({ devices: [deviceRow({ host_if_name: null })] }), []],
] as const)('a device the pod shows is not adopted: %s', ([reason, links, facts, onNode]) => {
  const seen = veth('a', 3, 1, [...links]);
  // A device that never had a name on the node may take its marker's, unless a node link has that name.
  if (reason === 'its name on the node is not known')
    seen.podLinks = [{ ...device(), ifalias: markerOf('eth1x', 'eth0') }];
  const d = decideAdoption(reading([seen], [], [...onNode]), facts, 0);
  expect(d.plan.attachments[0]?.interfaces.map((i) => i.ifName)).toEqual(['eth0']);
  expect(d.notes[0]?.map((n) => [n.msg, n.fields.reason])).toEqual([['device in pod not adopted', reason]]);
});

test('a device two pods claim is neither’s; one a fresh database never named takes its marker’s name', () => {
  const two = decideAdoption(
    reading([veth('a', 3, 1, [device()]), veth('b', 4, 2, [device()])]),
    factsOf({ devices: [deviceRow()] }),
    0,
  );
  expect(two.notes.flat().map((n) => n.fields.reason)).toEqual([
    'claimed by more than one pod',
    'claimed by more than one pod',
  ]);
  const fresh = decideAdoption(
    reading([veth('a', 3, 1, [{ ...device(), ifalias: markerOf('ens5', 'eth0') }])]),
    factsOf({ devices: [deviceRow({ host_if_name: null })] }),
    0,
  );
  expect(fresh.plan.attachments[0]?.interfaces[1]?.device).toEqual({
    id: MAC,
    mac: MAC,
    group: 'frontend',
    hostIfName: 'ens5',
    learnedHostIfName: true,
  });
});

test("a secondary network's device: after the host veths, its pool's addresses only where no one holds them, never another network's", () => {
  const secondary = (network: string, addresses: string[]): SecondarySeen => ({
    netns: '/var/run/netns/a',
    link: {
      ifindex: 9,
      ifname: 'net1',
      address: MAC,
      ifalias: markerOf('eth1', 'net1', { generation: 20, network, containerId: 'a' }),
    },
    key: { generation: 20, network, containerId: 'a' },
    addresses,
  });
  const facts = factsOf({ devices: [deviceRow()], holders: { '2 192.168.50.8': 77 } });
  const d = decideAdoption(
    reading([veth('a', 3, 1)], [secondary('sriov', ['192.168.50.7/24', '192.168.50.8/24', '10.244.1.1/24'])]),
    facts,
    0,
  );
  expect(d.plan.generationsAbove).toBe(20);
  expect(d.plan.attachments[1]).toEqual({
    network: 'sriov',
    containerId: 'a',
    ifName: 'net1',
    netns: '/var/run/netns/a',
    generation: 20,
    interfaces: [
      {
        ifName: 'net1',
        nicType: 'DelegatedNIC',
        routesJson: '["routes of sriov"]',
        device: { id: MAC, mac: MAC, group: 'frontend', hostIfName: 'eth1', learnedHostIfName: false },
        shown: { mac: MAC, ifIndex: 9 },
        addresses: [{ poolId: 2, address: '192.168.50.7' }],
      },
    ],
  });
  // A network with an InfraNIC, or none at all: a pod cannot make its device an attachment there.
  for (const [network, reason] of [
    ['ferry', 'not a secondary network'],
    ['nope', 'no such network'],
  ]) {
    const refused = decideAdoption(reading([], [secondary(network as string, [])]), facts, 0);
    expect(refused.plan.attachments).toEqual([]);
    expect(refused.refused.map((n) => [n.msg, n.fields.reason])).toEqual([
      ['secondary network device in pod not adopted', reason],
    ]);
  }
});
