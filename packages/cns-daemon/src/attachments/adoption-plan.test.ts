/**
 * Writing an adoption plan (Attachments.adopt) on a real SQLite file: what the node showed becomes an
 * attachment with its interfaces, devices and pool addresses, through the same checks whoever found it.
 */
import { expect, test } from 'vitest';
import { addDevice, request, stateOf, useAttachments, type World } from '../testing/attachments-world';
import type { AdoptedAttachment, AdoptedInterface, AdoptionPlan } from './adoption-plan';

const MAC = '02:fe:00:00:00:01';

/** What the node showed of pod "a": its host veth with one routed address, and a device a fresh database never named. */
const infra: AdoptedInterface = {
  ifName: 'eth0',
  nicType: 'InfraNIC',
  routesJson: '[]',
  hostVethName: 'fer-a',
  addresses: [],
};
const shownInfra = {
  ...infra,
  shown: { mac: '0a:58:0a:f4:01:05', ifIndex: 2 },
  addresses: [{ poolId: 1, address: '10.244.1.5' }],
};
const device = { id: MAC, mac: MAC, group: 'frontend', hostIfName: 'ens5', learnedHostIfName: true };
const net1: AdoptedInterface = { ifName: 'net1', nicType: 'DelegatedNIC', routesJson: '[]', device, addresses: [] };
const planned = (over: Partial<AdoptedAttachment> = {}): AdoptedAttachment => ({
  ...{ network: 'ferry', containerId: 'a', ifName: 'eth0', netns: '/var/run/netns/a', generation: 7 },
  interfaces: [shownInfra, net1],
  ...over,
});
const planOf = (attachments: AdoptedAttachment[], releasedSinceMs = 0): AdoptionPlan => ({
  generationsAbove: Math.max(0, ...attachments.map((a) => a.generation)),
  releasedSinceMs,
  attachments,
});
const poolOf = (w: World) => w.attachments.get('a').interfaces.flatMap((i) => i.addresses.map((x) => x.address));

function useWorld(t: Parameters<typeof useAttachments>[0]): World {
  const w = useAttachments(t, {
    networks: [{ name: 'ferry', ipv4: { subnet: '10.244.1.0/24' } }],
    delegatedDevices: [{ mac: MAC, group: 'frontend' }],
  });
  w.devices.upsert(MAC, MAC, 'frontend', undefined);
  return w;
}

test('a planned attachment is written whole: committed under its generation, its address and device held, the sequence above it', (t) => {
  const w = useWorld(t);
  expect(w.attachments.adopt(planOf([planned()]))).toEqual([{ generation: 7 }]);
  expect(
    w.attachments.get('a').interfaces.map((i) => [i.ifName, i.nicType, i.generation, i.state, i.mac, i.hostIfName]),
  ).toEqual([
    ['eth0', 'InfraNIC', 7, 'committed', '0a:58:0a:f4:01:05', undefined],
    ['net1', 'DelegatedNIC', 7, 'committed', undefined, 'ens5'],
  ]);
  expect(poolOf(w)).toEqual(['10.244.1.5/32']);
  expect(stateOf(w, MAC)).toBe('assigned');
  expect(w.devices.get(MAC)?.host_if_name).toBe('ens5');
  // A new pod gets neither that address nor a generation at or below the node's.
  const next = w.attachments.allocate(request('b')).plan;
  expect(next.generation).toBeGreaterThan(7);
  expect(next.nics[0]?.addresses.map((a) => a.address)).not.toContain('10.244.1.5/32');
});

test('an older generation is released first; the same or a newer one, or a release asked since the read, keeps it out', (t) => {
  const w = useWorld(t);
  addDevice(w, MAC, 'frontend', 'ens5');
  const old = w.attachments.allocate(request('a')).plan;
  const oldAddress = old.nics[0]?.addresses[0]?.address;
  const newer = planned({ generation: old.generation + 5 });
  expect(w.attachments.adopt(planOf([newer]))).toEqual([
    { generation: old.generation + 5, replacedGeneration: old.generation },
  ]);
  expect(w.attachments.get('a').interfaces.map((i) => i.generation)).toEqual([newer.generation, newer.generation]);
  // The old incarnation's address went with it: the node's is the one the attachment holds.
  expect(oldAddress).toBe('10.244.1.1/32');
  expect(poolOf(w)).toEqual(['10.244.1.5/32']);
  // The node shows the generation the database now holds, or an older one: nothing is written.
  expect(w.attachments.adopt(planOf([newer, planned({ generation: 2 })]))).toEqual([undefined, undefined]);
  // A DEL asked for after the node was read: the attachment does not come back.
  w.attachments.release('a', 'ferry', 'eth0');
  w.clock.now += 10;
  expect(w.attachments.adopt(planOf([planned({ generation: 90 })], w.clock.now - 20))).toEqual([undefined]);
  expect(() => w.attachments.get('a')).toThrow();
});
