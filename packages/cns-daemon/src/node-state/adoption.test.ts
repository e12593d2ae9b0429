/**
 * Adoption against a kernel stand-in (what `ip -j` would show of the node and the pods): the real store,
 * IPAM and Attachments underneath. test/e2e/node-state.test.ts does the same with real namespaces.
 */
import { Ip, type IpBackend, type IpLink, NetError } from '@ferry/net';
import { hostVethMarkerOf, markerOf } from '@ferry/shared-types/link-marker';
import pino from 'pino';
import { expect, type TestContext, test } from 'vitest';
import { Attachments } from '../attachments/attachments';
import { hostVethNameOf } from '../attachments/host-veth';
import { Ipam } from '../ipam/ipam';
import { AdoptedStore } from '../store/adopted';
import { AttachmentStore } from '../store/attachments';
import { openDatabase } from '../store/db';
import { DeviceStore } from '../store/devices';
import { PoolStore } from '../store/pools';
import { tempDir, testConfig } from '../testing/harness';
import { Adoption } from './adoption';

const DEVICE = { mac: '02:fe:00:00:00:01', hostIfName: 'eth1' };

interface Kernel {
  node: IpLink[];
  routes: { dst: string; dev: string; scope: string }[];
  pods: Map<string, IpLink[]>;
  /** Addresses in the pods, by netns and device (CIDR notation). */
  podAddresses: Map<string, string[]>;
}

/** A secondary network (infraNIC: false) beside the default one. */
const SRIOV = { name: 'sriov', infraNIC: false, ipv4: { subnet: '192.168.50.0/24' } };

function useNode(t: TestContext) {
  const config = testConfig(tempDir(t), {
    cooldownSec: 30,
    networks: [{ name: 'ferry', ipv4: { subnet: '10.244.1.0/24' }, ipv6: { subnet: 'fd00:10:244:1::/64' } }, SRIOV],
  });
  const store = openDatabase(config.database);
  t.onTestFinished(() => store.close());
  const kernel: Kernel = { node: [], routes: [], pods: new Map(), podAddresses: new Map() };
  const backend: IpBackend = {
    async show(ns, q) {
      if (q.of === 'routes') return [kernel.routes];
      if (q.of === 'addresses' && ns.kind !== 'self') {
        const local = kernel.podAddresses.get(`${ns.path} ${q.dev}`) ?? [];
        const addr_info = local.map((a) => ({
          family: 'inet',
          local: a.split('/')[0],
          prefixlen: Number(a.split('/')[1]),
        }));
        return [[{ ifindex: 9, ifname: q.dev, addr_info }]];
      }
      if (q.of !== 'links') throw new Error(`unexpected read ${q.of}`);
      if (ns.kind === 'self') return [kernel.node];
      const pod = kernel.pods.get(ns.path);
      if (!pod) throw new NetError('no-netns', `list links in ${ns.path}`, 'No such file or directory');
      return [pod];
    },
    apply: () => Promise.reject(new Error('adoption changes nothing on the node')),
    applyEach: () => Promise.reject(new Error('adoption changes nothing on the node')),
    routeTo: () => Promise.reject(new Error('unexpected')),
    deleteLink: () => Promise.reject(new Error('adoption changes nothing on the node')),
  };
  const clock = { now: Date.UTC(2026, 11, 1, 8, 0, 0) };
  const now = () => clock.now;
  const db = store.db;
  const attachmentStore = new AttachmentStore(db);
  const pools = new PoolStore(db);
  const devices = new DeviceStore(db);
  const ipam = new Ipam(pools, config);
  const attachments = new Attachments({ db, attachmentStore, devices, ipam, now });
  const log = pino({ level: 'silent' });
  const adoption = new Adoption({
    db,
    attachmentStore,
    adopted: new AdoptedStore(db),
    devices,
    ipam,
    attachments,
    ip: new Ip(backend),
    log,
    now,
  });
  devices.upsert(DEVICE.mac, DEVICE.mac, 'frontend', DEVICE.hostIfName);

  /** A pod ADDed by a ferryd whose database is gone: its host veth, marked, and routes to its addresses. */
  const livePod = (containerId: string, generation: number, last: number, pod: IpLink[] = []) => {
    const veth = hostVethNameOf('ferry', containerId, 'eth0');
    const netns = `/var/run/netns/${containerId}`;
    kernel.node.push({
      ifindex: 100 + kernel.node.length,
      ifname: veth,
      address: 'ee:ee:ee:ee:ee:ee',
      ifalias: hostVethMarkerOf({ generation, network: 'ferry', ifName: 'eth0', containerId, netns }),
      linkinfo: { info_kind: 'veth' },
    });
    kernel.routes.push({ dst: `10.244.1.${last}`, dev: veth, scope: 'link' });
    kernel.routes.push({ dst: `fd00:10:244:1::${last.toString(16)}`, dev: veth, scope: 'link' });
    kernel.pods.set(netns, [
      { ifindex: 1, ifname: 'lo', address: '00:00:00:00:00:00' },
      {
        ifindex: 2,
        ifname: 'eth0',
        address: `0a:58:0a:f4:01:${last.toString(16).padStart(2, '0')}`,
        linkinfo: { info_kind: 'veth' },
      },
      ...pod,
    ]);
    return { veth, netns };
  };
  const assigned = () =>
    pools
      .list({ state: 'Assigned' }, clock.now)
      .map((a) => `${a.container_id}:${a.address}`)
      .sort();
  const allocate = (containerId: string) =>
    attachments.allocate({ network: 'ferry', containerId, ifName: 'eth0', netns: '/proc/self/ns/net' }).plan;
  return { kernel, adoption, attachments, attachmentStore, devices, pools, assigned, allocate, livePod, clock };
}

test('pods the database lost are adopted: addresses held, generations never repeat, DEL releases them', async (t) => {
  const n = useNode(t);
  n.livePod('a', 7, 1);
  n.livePod('b', 9, 2);
  const r = await n.adoption.pass();
  expect(r).toEqual({ adopted: 2, replaced: 0, devices: 0, released: 0 });
  expect(n.assigned()).toEqual(['a:10.244.1.1', 'a:fd00:10:244:1::1', 'b:10.244.1.2', 'b:fd00:10:244:1::2']);
  const a = n.attachments.get('a').interfaces[0];
  expect(a).toMatchObject({ generation: 7, state: 'committed', netns: '/var/run/netns/a', mac: '0a:58:0a:f4:01:01' });
  expect(a?.adoptedAt).toBe(new Date(n.clock.now).toISOString());
  // A new pod gets neither live address, and a generation above every one the node shows.
  const c = n.allocate('c');
  expect(c.generation).toBeGreaterThan(9);
  expect(c.nics[0]?.addresses.map((x) => x.address)).toEqual(['10.244.1.3/32', 'fd00:10:244:1::3/128']);
  // The next pass has nothing to do; a DEL releases an adopted pod as any other.
  expect(await n.adoption.pass()).toEqual({ adopted: 0, replaced: 0, devices: 0, released: 0 });
  expect(n.attachments.release('a', 'ferry', 'eth0').released).toHaveLength(1);
  expect(n.assigned()).not.toContain('a:10.244.1.1');
});

test('a database restored from a backup: the older generation it holds gives way to the node', async (t) => {
  const n = useNode(t);
  // The backup: pod "a" at generation 1 with 10.244.1.1, pod "x" (long gone) with 10.244.1.2.
  n.allocate('a');
  n.allocate('x');
  // The node: "a" was added again later (generation 5) and got 10.244.1.2, which "x" once had.
  n.livePod('a', 5, 2);
  const r = await n.adoption.pass();
  expect(r).toMatchObject({ adopted: 1, replaced: 1 });
  expect(n.attachments.get('a').interfaces.map((i) => i.generation)).toEqual([5]);
  // The node routes 10.244.1.2 to "a": the database's claim for "x" gives way (x keeps nothing).
  expect(n.assigned()).toEqual(['a:10.244.1.2', 'a:fd00:10:244:1::2']);
  // The old incarnation's 10.244.1.1 is cooling down, not handed out again at once.
  expect(n.pools.list({ state: 'PendingRelease' }, n.clock.now).map((p) => p.address)).toContain('10.244.1.1');
});

test('a release asked for while the node was read keeps its attachment from coming back', async (t) => {
  const n = useNode(t);
  n.livePod('a', 3, 1);
  // The DEL's release ran (nothing to release: the database had lost it) just before the pass.
  n.attachments.release('a', 'ferry', 'eth0');
  expect(await n.adoption.pass()).toMatchObject({ adopted: 0 });
  // Long after, a veth still there is a live pod again.
  n.clock.now += 60_000;
  expect(await n.adoption.pass()).toMatchObject({ adopted: 1 });
});

test('an adopted endpoint whose host veth is gone is released by the next pass', async (t) => {
  const n = useNode(t);
  const { veth } = n.livePod('a', 3, 1);
  await n.adoption.pass();
  n.kernel.node = n.kernel.node.filter((l) => l.ifname !== veth);
  expect(await n.adoption.pass()).toMatchObject({ adopted: 0, released: 1 });
  expect(n.assigned()).toEqual([]);
});

test('a marker that does not match its veth, or no marker at all, is never adopted', async (t) => {
  const n = useNode(t);
  const { veth } = n.livePod('a', 3, 1);
  const link = n.kernel.node.find((l) => l.ifname === veth);
  if (!link) throw new Error('no veth');
  link.ifalias = hostVethMarkerOf({ generation: 30, network: 'ferry', ifName: 'eth0', containerId: 'b', netns: '/x' });
  expect(await n.adoption.pass()).toMatchObject({ adopted: 0 });
  // Its generation still counts: generations are never handed out twice on a node.
  expect(n.allocate('c').generation).toBeGreaterThan(30);
  n.attachments.release('c', 'ferry', 'eth0');
  link.ifalias = 'somebody else';
  expect(await n.adoption.pass()).toMatchObject({ adopted: 0 });
  expect(n.assigned()).toEqual([]);
});

test("a pod's delegated device is held for it only when ferryd would give it that device", async (t) => {
  const n = useNode(t);
  const device = (ifname: string, mac: string, attachment = 'eth0'): IpLink => ({
    ifindex: 7,
    ifname,
    address: mac,
    ifalias: markerOf(DEVICE.hostIfName, attachment),
    group: String(0x46525259),
  });
  n.livePod('a', 3, 1, [device('net1', DEVICE.mac)]);
  // A pod that claims a MAC the inventory does not know, and one whose marker names another attachment.
  n.livePod('b', 4, 2, [device('net1', '02:fe:00:00:00:99'), device('net2', DEVICE.mac, 'eth9')]);
  const r = await n.adoption.pass();
  expect(r).toMatchObject({ adopted: 2, devices: 1 });
  expect(n.attachments.get('a').interfaces.map((i) => [i.ifName, i.nicType, i.hostIfName, i.deviceMac])).toEqual([
    ['eth0', 'InfraNIC', undefined, undefined],
    ['net1', 'DelegatedNIC', 'eth1', DEVICE.mac],
  ]);
  expect(n.attachments.get('b').interfaces.map((i) => i.ifName)).toEqual(['eth0']);
  expect(n.devices.get(DEVICE.mac)?.interface_id).not.toBeNull();
});

test("a secondary network's attachment is adopted from its device's marker, never taking what another holds", async (t) => {
  const n = useNode(t);
  const OTHER = '02:fe:00:00:00:02';
  n.devices.upsert(OTHER, OTHER, 'frontend', 'eth2');
  const secondaryDevice = (mac: string, containerId: string, network = 'sriov'): IpLink => ({
    ifindex: 9,
    ifname: 'net1',
    address: mac,
    ifalias: markerOf('eth1', 'net1', { generation: 20, network, containerId }),
    group: String(0x46525259),
  });
  // Pod a: its InfraNIC's veth and, in the pod, its secondary network's device net1 with a pool address.
  const a = n.livePod('a', 3, 1, [secondaryDevice(DEVICE.mac, 'a')]);
  n.kernel.podAddresses.set(`${a.netns} net1`, ['192.168.50.7/24', '10.9.9.9/24']);
  // Pod b's device names a network with an InfraNIC: a pod cannot make its device an attachment there.
  n.livePod('b', 4, 2, [{ ...secondaryDevice(OTHER, 'b', 'ferry'), ifname: 'net1' }]);
  const r = await n.adoption.pass();
  expect(r).toMatchObject({ adopted: 3, devices: 1 });
  const net1 = n.attachments.get('a').interfaces.find((i) => i.ifName === 'net1');
  expect(net1).toMatchObject({ nicType: 'DelegatedNIC', network: 'sriov', generation: 20, hostIfName: 'eth1' });
  expect(net1?.adoptedAt).toBeDefined();
  // Only the address inside the network's pool is held.
  expect(net1?.addresses.map((x) => x.address)).toEqual(['192.168.50.7/24']);
  expect(n.attachments.get('b').interfaces.map((i) => i.ifName)).toEqual(['eth0']);
  expect(n.devices.get(OTHER)?.interface_id).toBeNull();
  // Generations never repeat: the sequence passed the device marker's too.
  expect(n.allocate('fresh').generation).toBeGreaterThan(20);
  // Its DEL releases it: the address cools down, the device is free.
  n.attachments.release('a', 'sriov', 'net1');
  expect(n.devices.get(DEVICE.mac)?.interface_id).toBeNull();
  expect(n.assigned().some((x) => x.includes('192.168.50.7'))).toBe(false);
});

test('a device two pods claim, or one whose MAC is on the node, is held for no one', async (t) => {
  const n = useNode(t);
  const claim = { ifindex: 7, ifname: 'net1', address: DEVICE.mac, ifalias: markerOf('eth1', 'eth0') };
  n.livePod('a', 3, 1, [claim]);
  n.livePod('b', 4, 2, [claim]);
  expect(await n.adoption.pass()).toMatchObject({ adopted: 2, devices: 0 });
  expect(n.devices.get(DEVICE.mac)?.interface_id).toBeNull();

  const m = useNode(t);
  m.livePod('a', 3, 1, [claim]);
  m.kernel.node.push({ ifindex: 50, ifname: 'eth1', address: DEVICE.mac });
  expect(await m.adoption.pass()).toMatchObject({ adopted: 1, devices: 0 });
});

test('a device a fresh database never saw on the node takes the name its marker gives, unless a node link has it', async (t) => {
  const n = useNode(t);
  const mac = '02:fe:00:00:00:31';
  n.devices.upsert(mac, mac, 'frontend', undefined);
  n.livePod('a', 3, 1, [{ ifindex: 7, ifname: 'net1', address: mac, ifalias: markerOf('ens5', 'eth0') }]);
  expect(await n.adoption.pass()).toMatchObject({ adopted: 1, devices: 1 });
  expect(n.attachments.get('a').interfaces[1]?.hostIfName).toBe('ens5');
  expect(n.devices.get(mac)?.host_if_name).toBe('ens5');

  const m = useNode(t);
  m.devices.upsert(mac, mac, 'frontend', undefined);
  m.livePod('a', 3, 1, [{ ifindex: 7, ifname: 'net1', address: mac, ifalias: markerOf('lo', 'eth0') }]);
  m.kernel.node.push({ ifindex: 1, ifname: 'lo', address: '00:00:00:00:00:00' });
  expect(await m.adoption.pass()).toMatchObject({ adopted: 1, devices: 0 });
  expect(m.devices.get(mac)?.host_if_name).toBeNull();
});
