/**
 * The attachment state machine on a real SQLite file, through its public methods only: what a shim,
 * the drainer, GC and an operator see. The clock is the test's; the commit journal is a real directory.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Allocation } from '@ferry/shared-types/api/allocations';
import type { QueueEntry } from '@ferry/shared-types/api/queue';
import { Code } from '@ferry/shared-types/errors';
import { expect, test } from 'vitest';
import {
  ATTACHMENTS_CLOCK,
  addDevice,
  commitOf,
  delegated,
  failure,
  request,
  reserve,
  stateOf,
  useAttachments,
  type World,
} from '../testing/attachments-world';
import { entryFileNameOf } from './host-veth';

const { T0 } = ATTACHMENTS_CLOCK;

/** A config with a second network, for what must stay scoped to one. */
const TWO_NETWORKS = {
  networks: [
    { name: 'ferry', ipv4: { subnet: '10.9.0.0/24' } },
    { name: 'other', ipv4: { subnet: '10.10.0.0/24' } },
  ],
};

/** What the shim writes into the commit journal after building `a`, under the attachment's own name. */
function writeJournalEntry(w: World, a: Allocation, writtenAtMs: number, generation = a.generation): string {
  const name = entryFileNameOf(a.network, a.containerId, a.ifName);
  const entry = {
    version: 1,
    containerId: a.containerId,
    writtenAt: new Date(writtenAtMs).toISOString(),
    ...commitOf(a),
    generation,
  };
  writeFileSync(join(w.journal.dir, name), JSON.stringify(entry));
  return name;
}

// --- allocate ---------------------------------------------------------------------------------------

test('allocate is idempotent per attachment until commit: the same plan, created only the first time', (t) => {
  const w = useAttachments(t);
  const first = w.attachments.allocate(request('c1'));
  expect(first.created).toBe(true);
  expect(first.plan).toMatchObject({ network: 'ferry', containerId: 'c1', ifName: 'eth0' });
  expect(first.plan.nics).toEqual([
    expect.objectContaining({
      nicType: 'InfraNIC',
      ifName: 'eth0',
      endpointId: 'c1',
      addresses: [
        { family: 4, address: '10.244.1.1/32', gateway: '169.254.1.1' },
        { family: 6, address: 'fd00:10:244:1::1/128', gateway: 'fe80::ecee:eeff:feee:eeee' },
      ],
    }),
  ]);
  w.clock.now += 5_000;
  const again = w.attachments.allocate(request('c1'));
  expect(again).toEqual({ plan: first.plan, created: false });
  // Another container is another attachment, with its own addresses and generation.
  const other = w.attachments.allocate(request('c2'));
  expect(other.created).toBe(true);
  expect(other.plan.generation).not.toBe(first.plan.generation);
  expect(other.plan.nics[0]?.addresses.map((x) => x.address)).toEqual(['10.244.1.2/32', 'fd00:10:244:1::2/128']);
});

test("the plan carries the network's MTU and DNS", (t) => {
  const w = useAttachments(t, {
    networks: [{ name: 'ferry', ipv4: { subnet: '10.9.0.0/24' }, mtu: 1400, dns: { nameservers: ['10.96.0.10'] } }],
  });
  const { plan } = w.attachments.allocate(request('c1'));
  expect(plan.nics[0]).toMatchObject({ nicType: 'InfraNIC', mtu: 1400 });
  expect(plan.dns).toEqual({ nameservers: ['10.96.0.10'] });
});

test('a committed attachment is refused with 105 and stays whole', (t) => {
  const w = useAttachments(t);
  const { plan } = w.attachments.allocate(request('c1'));
  w.attachments.commit('c1', commitOf(plan));
  const refused = failure(() => w.attachments.allocate(request('c1')));
  expect(refused.code).toBe(Code.AttachmentConflict);
  expect(refused.msg).toContain('already set up');
  const [rec] = w.attachments.get('c1').interfaces;
  expect(rec).toMatchObject({ state: 'committed', generation: plan.generation, mac: '02:00:00:00:aa:01' });
});

test("the same container and ifName on another network conflicts with the first network's attachment", (t) => {
  const w = useAttachments(t, TWO_NETWORKS);
  w.attachments.allocate(request('c1'));
  const refused = failure(() => w.attachments.allocate(request('c1', { network: 'other' })));
  expect(refused).toEqual({
    code: Code.AttachmentConflict,
    msg: 'attachment c1/eth0 belongs to network "ferry", not "other"',
  });
  // Another ifName of the same container may join the other network.
  expect(w.attachments.allocate(request('c1', { network: 'other', ifName: 'eth1' })).created).toBe(true);
  expect(w.attachments.get('c1').interfaces.map((i) => [i.network, i.ifName])).toEqual([
    ['ferry', 'eth0'],
    ['other', 'eth1'],
  ]);
});

test('an unknown network is refused with 101 naming the configured ones', (t) => {
  const w = useAttachments(t);
  expect(failure(() => w.attachments.allocate(request('c1', { network: 'nope' }))).code).toBe(Code.UnknownNetwork);
  expect(failure(() => w.attachments.get('c1')).code).toBe(Code.EndpointNotFound);
});

test('an ifName that is already a delegated interface of the container is refused', (t) => {
  const w = useAttachments(t);
  addDevice(w, '02:00:00:00:00:01', 'frontend', 'ens1f0');
  const { plan } = w.attachments.allocate(request('c1', { delegatedNICs: { group: 'frontend', count: 1 } }));
  expect(delegated(plan).map((n) => n.ifName)).toEqual(['net1']);
  const refused = failure(() => w.attachments.allocate(request('c1', { ifName: 'net1' })));
  expect(refused.code).toBe(Code.AttachmentConflict);
  expect(refused.msg).toContain('"net1" is already a delegated interface of this container');
});

test('an exhausted pool is refused with 100 and leaves nothing behind, in either family', (t) => {
  const w = useAttachments(t, {
    networks: [{ name: 'ferry', ipv4: { subnet: '10.9.0.0/24' }, ipv6: { subnet: 'fd00:9::/126' } }],
  });
  // IPv4 is picked first and IPv6 (three addresses in a /126) runs out: the IPv4 pick must go too.
  for (const id of ['c1', 'c2', 'c3']) w.attachments.allocate(request(id));
  const refused = failure(() => w.attachments.allocate(request('c4')));
  expect(refused.code).toBe(Code.PoolExhausted);
  expect(refused.msg).toContain('pool fd00:9::/126 is exhausted');
  expect(failure(() => w.attachments.get('c4')).code).toBe(Code.EndpointNotFound);
  w.attachments.release('c1', 'ferry', 'eth0');
  w.clock.now += 30_000;
  const c5 = w.attachments.allocate(request('c5')).plan;
  expect(c5.nics[0]?.addresses.map((x) => x.address)).toEqual(['10.9.0.4/32', 'fd00:9::1/128']);
});

// --- commit -----------------------------------------------------------------------------------------

test('commit records what the shim built and makes the attachment committed', (t) => {
  const w = useAttachments(t);
  const { plan } = w.attachments.allocate(request('c1', { pod: { namespace: 'shop', name: 'web-0', uid: 'u1' } }));
  w.clock.now += 1_000;
  const ep = w.attachments.commit('c1', commitOf(plan));
  expect(ep.interfaces).toEqual([
    expect.objectContaining({
      containerId: 'c1',
      ifName: 'eth0',
      nicType: 'InfraNIC',
      network: 'ferry',
      netns: '/var/run/netns/ferry-t-unit',
      pod: { namespace: 'shop', name: 'web-0', uid: 'u1' },
      state: 'committed',
      generation: plan.generation,
      mac: '02:00:00:00:aa:01',
      containerIfIndex: 2,
      createdAt: new Date(T0).toISOString(),
      updatedAt: new Date(T0 + 1_000).toISOString(),
    }),
  ]);
  expect(w.attachments.get('c1')).toEqual(ep);
});

test('commit refuses a stale generation, an interface not in the attachment, another network, no allocation', (t) => {
  const w = useAttachments(t);
  const { plan } = w.attachments.allocate(request('c1'));
  const stale = failure(() => w.attachments.commit('c1', { ...commitOf(plan), generation: plan.generation + 1 }));
  expect(stale.code).toBe(Code.AttachmentConflict);
  expect(stale.msg).toContain(`generation ${plan.generation + 1} is stale (current ${plan.generation})`);
  const unknown = failure(() => w.attachments.commit('c1', commitOf(plan, ['eth0', 'net7'])));
  expect(unknown.code).toBe(Code.InvalidConfig);
  expect(unknown.msg).toContain('interface "net7" is not part of this attachment');
  const network = failure(() => w.attachments.commit('c1', { ...commitOf(plan), network: 'other' }));
  expect(network.code).toBe(Code.AttachmentConflict);
  const none = failure(() => w.attachments.commit('c2', { ...commitOf(plan) }));
  expect(none.code).toBe(Code.EndpointNotFound);
  expect(none.msg).toContain('no allocation');
  // None of them changed anything: the attachment is still waiting for its own commit.
  expect(w.attachments.get('c1').interfaces[0]).toMatchObject({ state: 'allocated' });
  expect(w.attachments.get('c1').interfaces[0]?.mac).toBeUndefined();
});

test('a commit quoting the generation of a released allocation is refused after a new one', (t) => {
  const w = useAttachments(t);
  const old = w.attachments.allocate(request('c1')).plan;
  w.attachments.release('c1', 'ferry', 'eth0');
  const fresh = w.attachments.allocate(request('c1')).plan;
  // Generations are never reused, even when the old row is gone.
  expect(fresh.generation).toBeGreaterThan(old.generation);
  expect(failure(() => w.attachments.commit('c1', commitOf(old))).code).toBe(Code.AttachmentConflict);
  expect(w.attachments.commit('c1', commitOf(fresh)).interfaces[0]?.state).toBe('committed');
});

// --- release ----------------------------------------------------------------------------------------

test('release frees the addresses into cooldown and deletes the state; unknown is success', (t) => {
  const w = useAttachments(t, { networks: [{ name: 'ferry', ipv4: { subnet: '10.9.0.0/30' } }] });
  const c1 = w.attachments.allocate(request('c1')).plan;
  w.attachments.commit('c1', commitOf(c1));
  w.attachments.allocate(request('c2'));
  const released = w.attachments.release('c1', 'ferry', 'eth0');
  expect(released.released).toEqual([
    expect.objectContaining({
      containerId: 'c1',
      ifName: 'eth0',
      state: 'committed',
      addresses: c1.nics[0]?.addresses,
    }),
  ]);
  expect(failure(() => w.attachments.get('c1')).code).toBe(Code.EndpointNotFound);
  // Still cooling down: nobody gets c1's address yet.
  w.clock.now += 29_999;
  expect(failure(() => w.attachments.allocate(request('c3'))).code).toBe(Code.PoolExhausted);
  w.clock.now += 1;
  expect(w.attachments.allocate(request('c3')).plan.nics[0]?.addresses).toEqual(c1.nics[0]?.addresses);
  // A second release, and a release of what never was, succeed with nothing released.
  expect(w.attachments.release('c1', 'ferry', 'eth0')).toEqual({ released: [] });
  expect(w.attachments.release('never', 'ferry', 'eth0')).toEqual({ released: [] });
});

test('release with a generation leaves another generation, or another network, alone', (t) => {
  const w = useAttachments(t);
  const { plan } = w.attachments.allocate(request('c1'));
  expect(w.attachments.release('c1', 'ferry', 'eth0', plan.generation + 1)).toEqual({ released: [] });
  expect(w.attachments.release('c1', 'other', 'eth0')).toEqual({ released: [] });
  expect(w.attachments.get('c1').interfaces).toHaveLength(1);
  expect(w.attachments.release('c1', 'ferry', 'eth0', plan.generation).released).toHaveLength(1);
  expect(failure(() => w.attachments.get('c1')).code).toBe(Code.EndpointNotFound);
});

test('releaseIfOnly releases an InfraNIC alone whose host veth the shim deleted, else lists what to tear down', (t) => {
  const w = useAttachments(t);
  addDevice(w, '02:00:00:00:00:01', 'frontend', 'ens1f0');
  const alone = w.attachments.allocate(request('c1')).plan;
  // Another generation is unknown: nothing released, nothing to tear down.
  expect(w.attachments.releaseIfOnly('c1', 'ferry', 'eth0', alone.generation + 1)).toEqual({ released: [] });
  expect(w.attachments.get('c1').interfaces).toHaveLength(1);
  const done = w.attachments.releaseIfOnly('c1', 'ferry', 'eth0', alone.generation);
  expect(done.released.map((r) => r.ifName)).toEqual(['eth0']);
  expect(done.toTearDown).toBeUndefined();
  expect(failure(() => w.attachments.get('c1')).code).toBe(Code.EndpointNotFound);
  expect(w.attachments.releaseIfOnly('c1', 'ferry', 'eth0')).toEqual({ released: [] });

  // With a delegated NIC the device must go home first: nothing released, both interfaces listed.
  w.attachments.allocate(request('c2', { delegatedNICs: { group: 'frontend', count: 1 } }));
  const more = w.attachments.releaseIfOnly('c2', 'ferry', 'eth0');
  expect(more.released).toEqual([]);
  expect(more.toTearDown?.map((r) => [r.ifName, r.nicType, r.hostIfName])).toEqual([
    ['eth0', 'InfraNIC', undefined],
    ['net1', 'DelegatedNIC', 'ens1f0'],
  ]);
  expect(stateOf(w, '02:00:00:00:00:01')).toBe('assigned');
  expect(w.devicesReleased).toBe(0);
});

test("releaseQueued: 'released', 'absent' for unknown or another network, 'stale' when re-allocated after queuing", (t) => {
  const w = useAttachments(t);
  const entry = (containerId: string, queuedAtMs: number, network = 'ferry'): QueueEntry => ({
    version: 1,
    network,
    containerId,
    ifName: 'eth0',
    netns: '',
    queuedAt: new Date(queuedAtMs).toISOString(),
  });
  w.attachments.allocate(request('c1'));
  const queuedAt = w.clock.now + 1_000;
  expect(w.attachments.releaseQueued(entry('never', queuedAt))).toBe('absent');
  expect(w.attachments.releaseQueued(entry('c1', queuedAt, 'other'))).toBe('absent');
  // The ADD is retried after the DEL was queued: the attachment is the re-ADD's now.
  w.clock.now += 2_000;
  w.attachments.allocate(request('c1'));
  expect(w.attachments.releaseQueued(entry('c1', queuedAt))).toBe('stale');
  expect(w.attachments.get('c1').interfaces).toHaveLength(1);
  // A commit after the DEL was queued makes it stale as well.
  const c2 = w.attachments.allocate(request('c2')).plan;
  w.clock.now += 2_000;
  w.attachments.commit('c2', commitOf(c2));
  expect(w.attachments.releaseQueued(entry('c2', w.clock.now - 1_000))).toBe('stale');
  // Queued at (or after) the last change: the DEL is this attachment's.
  expect(w.attachments.releaseQueued(entry('c1', w.clock.now))).toBe('released');
  expect(failure(() => w.attachments.get('c1')).code).toBe(Code.EndpointNotFound);
  expect(w.attachments.releaseQueued(entry('c1', w.clock.now))).toBe('absent');
});

test('releaseContainer releases every attachment of the container and no other', (t) => {
  const w = useAttachments(t, TWO_NETWORKS);
  w.attachments.allocate(request('c1'));
  w.attachments.allocate(request('c1', { network: 'other', ifName: 'eth1' }));
  w.attachments.allocate(request('c2'));
  const r = w.attachments.releaseContainer('c1');
  expect(r.released.map((i) => [i.network, i.ifName]).sort()).toEqual([
    ['ferry', 'eth0'],
    ['other', 'eth1'],
  ]);
  expect(failure(() => w.attachments.get('c1')).code).toBe(Code.EndpointNotFound);
  expect(w.attachments.get('c2').interfaces).toHaveLength(1);
  expect(w.attachments.releaseContainer('c1')).toEqual({ released: [] });
});

// --- gc ---------------------------------------------------------------------------------------------

test('gc releases every attachment of the network not listed valid, and collects errors without stopping', (t) => {
  const w = useAttachments(t, TWO_NETWORKS);
  for (const id of ['keep', 'broken', 'gone']) w.attachments.allocate(request(id));
  w.attachments.allocate(request('keep', { ifName: 'eth1' }));
  w.attachments.allocate(request('elsewhere', { network: 'other' }));
  // A row this ferryd cannot read: its release fails, and the next attachment is still collected.
  w.db.prepare(`UPDATE interfaces SET routes_json = 'not json' WHERE container_id = 'broken'`).run();
  const r = w.attachments.gc({ network: 'ferry', validAttachments: [{ containerId: 'keep', ifName: 'eth0' }] });
  expect(r.removed.map((i) => `${i.containerId}/${i.ifName}`).sort()).toEqual(['gone/eth0', 'keep/eth1']);
  expect(r.errors).toEqual([{ containerId: 'broken', ifName: 'eth0', msg: expect.any(String) }]);
  expect(w.attachments.get('keep').interfaces.map((i) => i.ifName)).toEqual(['eth0']);
  expect(w.attachments.get('elsewhere').interfaces).toHaveLength(1);
  expect(failure(() => w.attachments.get('gone')).code).toBe(Code.EndpointNotFound);
  expect(failure(() => w.attachments.gc({ network: 'nope', validAttachments: [] })).code).toBe(Code.UnknownNetwork);
});

// --- the commit journal -----------------------------------------------------------------------------

test("settleJournal promotes an entry to a commit at the shim's time and removes the file", (t) => {
  const w = useAttachments(t);
  const { plan } = w.attachments.allocate(request('c1'));
  expect(w.attachments.settleJournal()).toEqual({ promoted: 0, discarded: 0 });
  const name = writeJournalEntry(w, plan, T0 + 500);
  expect(w.attachments.waitingInJournal()).toEqual([name]);
  w.clock.now += 60_000;
  expect(w.attachments.settleJournal()).toEqual({ promoted: 1, discarded: 0 });
  expect(w.attachments.get('c1').interfaces[0]).toMatchObject({
    state: 'committed',
    mac: '02:00:00:00:aa:01',
    updatedAt: new Date(T0 + 500).toISOString(),
  });
  expect(w.attachments.waitingInJournal()).toEqual([]);
  expect(w.settled).toEqual([{ promoted: 1, discarded: 0 }]);
  // Promoted means committed: the shim's retry of the ADD is refused, as after a commit over the socket.
  expect(failure(() => w.attachments.allocate(request('c1'))).code).toBe(Code.AttachmentConflict);
});

test('settleJournal discards an entry of a stale generation, of a released attachment, and an unreadable one', (t) => {
  const w = useAttachments(t);
  const c1 = w.attachments.allocate(request('c1')).plan;
  const c2 = w.attachments.allocate(request('c2')).plan;
  writeJournalEntry(w, c1, T0, c1.generation + 7);
  writeJournalEntry(w, c2, T0);
  w.attachments.release('c2', 'ferry', 'eth0');
  writeFileSync(join(w.journal.dir, entryFileNameOf('ferry', 'c3', 'eth0')), '{"version": 1');
  expect(w.attachments.settleJournal()).toEqual({ promoted: 0, discarded: 3 });
  expect(w.attachments.waitingInJournal()).toEqual([]);
  expect(w.attachments.get('c1').interfaces[0]).toMatchObject({ state: 'allocated', generation: c1.generation });
  expect(w.settled).toEqual([{ promoted: 0, discarded: 3 }]);
});

test('settleJournal({ attachment }) settles only that attachment; ({ names }) only the files named', (t) => {
  const w = useAttachments(t);
  const plans = ['c1', 'c2', 'c3'].map((id) => w.attachments.allocate(request(id)).plan);
  const names = plans.map((p) => writeJournalEntry(w, p, T0));
  const [c1, c2, c3] = plans as [Allocation, Allocation, Allocation];
  expect(w.attachments.settleJournal({ attachment: { network: 'ferry', containerId: 'c2', ifName: 'eth0' } })).toEqual({
    promoted: 1,
    discarded: 0,
  });
  expect(w.attachments.get('c2').interfaces[0]?.state).toBe('committed');
  expect(w.attachments.get('c1').interfaces[0]?.state).toBe('allocated');
  expect(w.attachments.waitingInJournal().sort()).toEqual([names[0], names[2]].sort());
  // A name already settled (c2's) is skipped, not counted.
  expect(w.attachments.settleJournal({ names: [names[1] as string, names[2] as string] })).toEqual({
    promoted: 1,
    discarded: 0,
  });
  expect(w.attachments.get(c3.containerId).interfaces[0]?.state).toBe('committed');
  expect(w.attachments.get(c1.containerId).interfaces[0]?.state).toBe('allocated');
  expect(w.attachments.get(c2.containerId).interfaces[0]?.state).toBe('committed');
  expect(w.attachments.waitingInJournal()).toEqual([names[0]]);
  // An attachment without an entry: nothing to do (and no metric update).
  const before = w.settled.length;
  expect(w.attachments.settleJournal({ attachment: { network: 'ferry', containerId: 'c9', ifName: 'eth0' } })).toEqual({
    promoted: 0,
    discarded: 0,
  });
  expect(w.settled).toHaveLength(before);
});

test('settleJournal refuses to run inside a transaction and leaves the entry for the next settle', (t) => {
  const w = useAttachments(t);
  const { plan } = w.attachments.allocate(request('c1'));
  const name = writeJournalEntry(w, plan, T0);
  const inside = w.db.transaction(() => failure(() => w.attachments.settleJournal()));
  expect(inside()).toMatchObject({ code: Code.Internal, msg: expect.stringContaining('inside a transaction') });
  expect(w.attachments.waitingInJournal()).toEqual([name]);
  expect(w.attachments.settleJournal()).toEqual({ promoted: 1, discarded: 0 });
});

// --- delegated devices ------------------------------------------------------------------------------

test('delegated NICs: the pod reservations first under their names, then the group, named net1, net2…', (t) => {
  const w = useAttachments(t);
  addDevice(w, '02:00:00:00:00:01', 'frontend', 'ens1f0');
  addDevice(w, '02:00:00:00:00:02', 'frontend', 'ens1f1');
  addDevice(w, '02:00:00:00:00:03', 'frontend', 'ens1f2');
  addDevice(w, '02:00:00:00:00:09', 'storage', 'ens2f0');
  reserve(w, '02:00:00:00:00:09', {
    namespace: 'shop',
    pod: 'db-0',
    ifName: 'stor0',
    addresses: [{ family: 4, address: '192.0.2.9/24' }],
    routes: [{ dst: '198.51.100.0/24', gw: '192.0.2.1' }],
  });
  const pod = { namespace: 'shop', name: 'db-0' };
  const { plan } = w.attachments.allocate(request('c1', { pod, delegatedNICs: { group: 'frontend', count: 2 } }));
  expect(plan.nics.map((n) => [n.nicType, n.ifName])).toEqual([
    ['InfraNIC', 'eth0'],
    ['DelegatedNIC', 'stor0'],
    ['DelegatedNIC', 'net1'],
    ['DelegatedNIC', 'net2'],
  ]);
  expect(delegated(plan)).toEqual([
    {
      nicType: 'DelegatedNIC',
      ifName: 'stor0',
      endpointId: 'c1-stor0',
      mac: '02:00:00:00:00:09',
      hostIfName: 'ens2f0',
      addresses: [{ family: 4, address: '192.0.2.9/24' }],
      routes: [{ dst: '198.51.100.0/24', gw: '192.0.2.1' }],
    },
    expect.objectContaining({ ifName: 'net1', endpointId: 'c1-net1', mac: '02:00:00:00:00:01', hostIfName: 'ens1f0' }),
    expect.objectContaining({ ifName: 'net2', endpointId: 'c1-net2', mac: '02:00:00:00:00:02', hostIfName: 'ens1f1' }),
  ]);
  // Devices from a group get no addresses of the network's pools: those are the InfraNIC's.
  expect(delegated(plan)[1]?.addresses).toEqual([]);
  expect(
    ['02:00:00:00:00:01', '02:00:00:00:00:02', '02:00:00:00:00:03', '02:00:00:00:00:09'].map((m) => stateOf(w, m)),
  ).toEqual(['assigned', 'assigned', 'free', 'assigned']);
  // Repeated, the allocation hands out the same devices (and takes no more).
  expect(w.attachments.allocate(request('c1', { pod, delegatedNICs: { group: 'frontend', count: 2 } })).plan).toEqual(
    plan,
  );
  expect(stateOf(w, '02:00:00:00:00:03')).toBe('free');
});

test("a second attachment of the pod names its devices past the container's names and leaves the reserved one", (t) => {
  const w = useAttachments(t, TWO_NETWORKS);
  addDevice(w, '02:00:00:00:00:01', 'frontend', 'ens1f0');
  addDevice(w, '02:00:00:00:00:02', 'frontend', 'ens1f1');
  addDevice(w, '02:00:00:00:00:09', 'storage', 'ens2f0');
  reserve(w, '02:00:00:00:00:09', { namespace: 'shop', pod: 'db-0' });
  const pod = { namespace: 'shop', name: 'db-0' };
  const first = w.attachments.allocate(request('c1', { pod, delegatedNICs: { group: 'frontend', count: 1 } })).plan;
  expect(delegated(first).map((n) => [n.ifName, n.mac])).toEqual([
    ['net1', '02:00:00:00:00:09'],
    ['net2', '02:00:00:00:00:01'],
  ]);
  const second = w.attachments.allocate(
    request('c1', { network: 'other', ifName: 'eth1', pod, delegatedNICs: { group: 'frontend', count: 1 } }),
  ).plan;
  // The reserved device stays with the first attachment; the new one is named past net1 and net2.
  expect(delegated(second).map((n) => [n.ifName, n.mac])).toEqual([['net3', '02:00:00:00:00:02']]);
});

test('too few free devices of the group is 106, and the allocation leaves nothing behind', (t) => {
  const w = useAttachments(t);
  addDevice(w, '02:00:00:00:00:01', 'frontend', 'ens1f0');
  addDevice(w, '02:00:00:00:00:02', 'frontend', 'ens1f1', false);
  addDevice(w, '02:00:00:00:00:03', 'frontend', 'ens1f2');
  reserve(w, '02:00:00:00:00:03', { namespace: 'shop', pod: 'someone-else' });
  // One free: the second is not on the node and the third is reserved for another pod.
  const refused = failure(() =>
    w.attachments.allocate(request('c1', { delegatedNICs: { group: 'frontend', count: 2 } })),
  );
  expect(refused).toEqual({
    code: Code.DeviceUnavailable,
    msg: 'allocate 2 delegated NICs of group "frontend": only 1 free on this node',
  });
  expect(failure(() => w.attachments.get('c1')).code).toBe(Code.EndpointNotFound);
  expect(stateOf(w, '02:00:00:00:00:01')).toBe('free');
  expect(w.attachments.allocate(request('c1', { delegatedNICs: { group: 'frontend', count: 1 } })).created).toBe(true);
});

test('a reserved device held by another pod, or not on the node, is 106', (t) => {
  const w = useAttachments(t);
  addDevice(w, '02:00:00:00:00:01', 'frontend', 'ens1f0');
  addDevice(w, '02:00:00:00:00:02', 'frontend', 'ens1f1', false);
  // Held: taken by a group request before the operator reserved it.
  w.attachments.allocate(request('holder', { delegatedNICs: { group: 'frontend', count: 1 } }));
  reserve(w, '02:00:00:00:00:01', { namespace: 'shop', pod: 'db-0' });
  const held = failure(() => w.attachments.allocate(request('c1', { pod: { namespace: 'shop', name: 'db-0' } })));
  expect(held).toEqual({
    code: Code.DeviceUnavailable,
    msg: 'device 02:00:00:00:00:01 reserved for shop/db-0 is held by another pod',
  });
  reserve(w, '02:00:00:00:00:02', { namespace: 'shop', pod: 'db-1' });
  const absent = failure(() => w.attachments.allocate(request('c2', { pod: { namespace: 'shop', name: 'db-1' } })));
  expect(absent).toEqual({
    code: Code.DeviceUnavailable,
    msg: 'device 02:00:00:00:00:02 reserved for shop/db-1 is not on the node',
  });
  expect(failure(() => w.attachments.get('c1')).code).toBe(Code.EndpointNotFound);
  expect(failure(() => w.attachments.get('c2')).code).toBe(Code.EndpointNotFound);
});

test("a reserved name that is the attachment's own ifName is 105", (t) => {
  const w = useAttachments(t);
  addDevice(w, '02:00:00:00:00:01', 'frontend', 'ens1f0');
  reserve(w, '02:00:00:00:00:01', { namespace: 'shop', pod: 'db-0', ifName: 'eth0' });
  const refused = failure(() => w.attachments.allocate(request('c1', { pod: { namespace: 'shop', name: 'db-0' } })));
  expect(refused.code).toBe(Code.AttachmentConflict);
  expect(refused.msg).toContain('interface name "eth0" is already used in c1');
  expect(stateOf(w, '02:00:00:00:00:01')).toBe('free');
});

test("a reservation's own ifName is honoured even when another reservation's device comes first", (t) => {
  const w = useAttachments(t);
  addDevice(w, '02:00:00:00:00:01', 'frontend', 'ens1f0');
  addDevice(w, '02:00:00:00:00:02', 'frontend', 'ens1f1');
  reserve(w, '02:00:00:00:00:01', { namespace: 'shop', pod: 'db-0' });
  reserve(w, '02:00:00:00:00:02', { namespace: 'shop', pod: 'db-0', ifName: 'net1' });
  const { plan } = w.attachments.allocate(request('c1', { pod: { namespace: 'shop', name: 'db-0' } }));
  expect(delegated(plan).map((n) => [n.mac, n.ifName])).toEqual([
    ['02:00:00:00:00:01', 'net2'],
    ['02:00:00:00:00:02', 'net1'],
  ]);
});

test('a device never seen on the node (no host name) is 106', (t) => {
  const w = useAttachments(t);
  w.devices.upsert('02:00:00:00:00:01', '02:00:00:00:00:01', 'frontend', undefined);
  w.devices.setPresence('02:00:00:00:00:01', true, { atMs: w.clock.now, mac: '02:00:00:00:00:01' });
  const refused = failure(() =>
    w.attachments.allocate(request('c1', { delegatedNICs: { group: 'frontend', count: 1 } })),
  );
  expect(refused).toEqual({
    code: Code.DeviceUnavailable,
    msg: 'device 02:00:00:00:00:01 has never been seen on the node',
  });
});

test('devices are freed by every kind of release, and each release that frees one says so', (t) => {
  const w = useAttachments(t);
  addDevice(w, '02:00:00:00:00:01', 'frontend', 'ens1f0');
  const nics = { delegatedNICs: { group: 'frontend', count: 1 } };
  const holdAndCheck = (containerId: string) => {
    w.clock.now += 1_000;
    const { plan } = w.attachments.allocate(request(containerId, nics));
    expect(delegated(plan).map((n) => n.mac)).toEqual(['02:00:00:00:00:01']);
    expect(stateOf(w, '02:00:00:00:00:01')).toBe('assigned');
    // Taken: nobody else gets it meanwhile.
    expect(failure(() => w.attachments.allocate(request('waiting', nics))).code).toBe(Code.DeviceUnavailable);
    return plan;
  };
  const released: string[] = [];
  const expectFreed = (how: string) => {
    released.push(how);
    expect(stateOf(w, '02:00:00:00:00:01'), how).toBe('free');
    expect(w.devicesReleased, how).toBe(released.length);
  };

  holdAndCheck('a');
  w.attachments.release('a', 'ferry', 'eth0');
  expectFreed('release');
  holdAndCheck('b');
  w.attachments.releaseContainer('b');
  expectFreed('releaseContainer');
  holdAndCheck('c');
  w.attachments.gc({ network: 'ferry', validAttachments: [] });
  expectFreed('gc');
  holdAndCheck('d');
  expect(
    w.attachments.releaseQueued({
      version: 1,
      network: 'ferry',
      containerId: 'd',
      ifName: 'eth0',
      netns: '',
      queuedAt: new Date(w.clock.now).toISOString(),
    }),
  ).toBe('released');
  expectFreed('releaseQueued');
  // An InfraNIC alone frees no device, and says nothing.
  w.attachments.allocate(request('infra-only'));
  w.attachments.release('infra-only', 'ferry', 'eth0');
  expect(w.devicesReleased).toBe(released.length);
});

test('a commit of a delegated attachment records every NIC', (t) => {
  const w = useAttachments(t);
  addDevice(w, '02:00:00:00:00:01', 'frontend', 'ens1f0');
  const { plan } = w.attachments.allocate(request('c1', { delegatedNICs: { group: 'frontend', count: 1 } }));
  const ep = w.attachments.commit('c1', commitOf(plan));
  expect(ep.interfaces.map((i) => [i.ifName, i.nicType, i.state, i.mac, i.deviceMac, i.hostIfName])).toEqual([
    ['eth0', 'InfraNIC', 'committed', '02:00:00:00:aa:01', undefined, undefined],
    ['net1', 'DelegatedNIC', 'committed', '02:00:00:00:aa:02', '02:00:00:00:00:01', 'ens1f0'],
  ]);
});
