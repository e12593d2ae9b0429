/**
 * A device's identity through the inventory's scan, on a fake sysfs tree and the node's links as
 * `ip -j link show` lists them (a fake runner: no VF here has a real netdev with a zero MAC, and the kernel
 * refuses one on a veth): VFs keyed by PCI address whatever their MACs, state kept across re-creation,
 * devices gone past the grace period, and a database of schema 4 re-keyed.
 */

import { Ip, Iproute2 } from '@ferry/net';
import Database from 'better-sqlite3';
import pino from 'pino';
import { expect, type TestContext, test } from 'vitest';
import { SysfsTree } from '../../../../test/fixtures/sysfs';
import type { FerrydConfig } from '../config';
import { MIGRATIONS } from '../store/migrations/index';
import { commitOf, request, useAttachments } from '../testing/attachments-world';
import { tempDir } from '../testing/harness';
import { Inventory } from './inventory';
import { Sysfs } from './sysfs';

const PF = '0000:3b:00.0';
const VF = ['0000:3b:02.0', '0000:3b:02.1', '0000:3b:02.2', '0000:3b:02.3'] as const;
const SHARED = '02:00:00:00:5f:01';
const ZERO = '00:00:00:00:00:00';
const PATTERN: FerrydConfig['delegatedDevices'] = [
  { namePattern: '^ens1f0v', group: 'sriov', nicType: 'DelegatedNIC' },
];

interface Link {
  ifindex: number;
  ifname: string;
  address: string;
  link_type: string;
  flags: string[];
}
const link = (ifindex: number, ifname: string, address: string): Link => ({
  ifindex,
  ifname,
  address,
  link_type: 'ether',
  flags: ['UP'],
});

/** A PF with four VFs in sysfs; a world and an inventory whose scans list `node.links`. */
function useSriov(
  t: TestContext,
  opts: { config?: FerrydConfig['delegatedDevices']; prepare?: (path: string) => void; goneGraceSec?: number } = {},
) {
  const tree = new SysfsTree(tempDir(t));
  tree.addFunction({ address: PF, deviceId: '1593', driver: 'ice', netdev: 'ens1f0' });
  for (const [i, address] of VF.entries())
    tree.addVf({ address, pf: PF, vfIndex: i, driver: 'iavf', netdev: `ens1f0v${i}` });
  const config = opts.config ?? PATTERN;
  const w = useAttachments(t, { delegatedDevices: config, sysfsRoot: tree.root }, opts.prepare);
  const node = { links: [] as Link[] };
  const ip = new Ip(new Iproute2(async () => ({ exitCode: 0, stdout: JSON.stringify(node.links), stderr: '' })));
  const inventory = new Inventory({
    db: w.db,
    devices: w.devices,
    ip,
    config,
    log: pino({ level: 'silent' }),
    now: () => w.clock.now,
    goneGraceSec: opts.goneGraceSec ?? 300,
    pci: w.pci,
    sysfs: new Sysfs(tree.root),
  });
  return { tree, w, node, inventory };
}

const ids = (inventory: Inventory) => inventory.list().map((d) => [d.id, d.mac, d.state]);

test('VFs that share a MAC, or have an all-zero one, are four devices keyed by their PCI addresses', async (t) => {
  const { node, inventory } = useSriov(t);
  node.links = [
    link(10, 'ens1f0v0', SHARED),
    link(11, 'ens1f0v1', SHARED),
    link(12, 'ens1f0v2', ZERO),
    link(13, 'ens1f0v3', ZERO),
  ];
  await inventory.scan();
  expect(ids(inventory)).toEqual([
    [VF[0], SHARED, 'free'],
    [VF[1], SHARED, 'free'],
    [VF[2], ZERO, 'free'],
    [VF[3], ZERO, 'free'],
  ]);
  expect(inventory.list().map((d) => d.pciAddress)).toEqual([...VF]);
  // By MAC, such a device cannot be named: the operator is told to use its PCI address.
  expect(() => inventory.idOf(SHARED)).toThrow(/2 devices have this MAC \(0000:3b:02.0, 0000:3b:02.1\)/);
  expect(inventory.idOf(VF[1])).toBe(VF[1]);
});

test('a VF re-created with a new MAC and netdev name keeps its row: its reservation, and the pod holding another', async (t) => {
  const { tree, w, node, inventory } = useSriov(t);
  node.links = [link(10, 'ens1f0v0', '02:00:00:00:00:a0'), link(11, 'ens1f0v1', '02:00:00:00:00:a1')];
  await inventory.scan();
  inventory.reserve(VF[0], { namespace: 'shop', pod: 'db-0', addresses: [], routes: [] });
  // The pod's ADD is given the VF that is not reserved; the shim moves it into the pod.
  const { plan } = w.attachments.allocate(request('c1', { delegatedNICs: { group: 'sriov', count: 1 } }));
  expect(plan.nics.flatMap((n) => (n.nicType === 'DelegatedNIC' ? [n.pciAddress] : []))).toEqual([VF[1]]);
  w.attachments.commit('c1', commitOf(plan));
  w.clock.now += 1_000;

  // The PF's VFs are re-created: VF 0 comes back as eth7 with a new MAC; VF 1 is in the pod, which sets
  // its MAC (as sriov-cni does).
  tree.setNetdev(VF[0], 'eth7');
  node.links = [link(20, 'eth7', '02:00:00:00:00:b0')];
  const scanned = await inventory.scan();
  expect(scanned.renamed).toBe(1); // back to the name it had: ens1f0v0
  expect(ids(inventory)).toEqual([
    [VF[0], '02:00:00:00:00:b0', 'free'],
    [VF[1], '02:00:00:00:00:a1', 'assigned'],
  ]);
  expect(inventory.list()[0]?.reservation).toMatchObject({ namespace: 'shop', pod: 'db-0' });
  expect(inventory.list()[1]?.assignedTo).toMatchObject({ containerId: 'c1' });

  // The pod's DEL brings VF 1 home under its name, with the MAC the pod gave it: the same device, free.
  w.attachments.release('c1', 'ferry', 'eth0');
  node.links = [link(20, 'ens1f0v0', '02:00:00:00:00:b0'), link(11, 'ens1f0v1', '02:00:00:00:00:c1')];
  w.clock.now += 1_000;
  await inventory.scan();
  expect(ids(inventory)).toEqual([
    [VF[0], '02:00:00:00:00:b0', 'free'],
    [VF[1], '02:00:00:00:00:c1', 'free'],
  ]);
});

test('a device a pattern found leaves the inventory once off the node past the grace period; a mac entry keeps its own', async (t) => {
  const MAC_ENTRY = '02:00:00:00:00:e1';
  const config: FerrydConfig['delegatedDevices'] = [
    ...PATTERN,
    { mac: MAC_ENTRY, group: 'pinned', nicType: 'DelegatedNIC' },
  ];
  const { node, inventory, w } = useSriov(t, { config, goneGraceSec: 60 });
  node.links = [link(10, 'ens1f0v0', '02:00:00:00:00:a0'), link(30, 'eth9', MAC_ENTRY)];
  await inventory.scan();
  expect(ids(inventory)).toEqual([
    ['02:00:00:00:00:e1', MAC_ENTRY, 'free'],
    [VF[0], '02:00:00:00:00:a0', 'free'],
  ]);
  node.links = [];
  w.clock.now += 59_000;
  await inventory.scan();
  expect(ids(inventory).map((d) => d[2])).toEqual(['missing', 'missing']);
  w.clock.now += 2_000;
  await inventory.scan();
  expect(ids(inventory)).toEqual([['02:00:00:00:00:e1', MAC_ENTRY, 'missing']]);
  // Back on the node, it joins again.
  node.links = [link(10, 'ens1f0v0', '02:00:00:00:00:a0')];
  await inventory.scan();
  expect(ids(inventory)).toContainEqual([VF[0], '02:00:00:00:00:a0', 'free']);
});

test('a schema-4 database: rows keyed by MAC are keyed by PCI address at the first scan, holder and reservation kept', async (t) => {
  const HELD = '02:00:00:00:00:a0';
  const RESERVED = '02:00:00:00:00:a1';
  const AWAY = '02:00:00:00:00:a9';
  const seed = (path: string) => {
    const db = new Database(path);
    db.exec(
      MIGRATIONS.filter((m) => m.version <= 4)
        .map((m) => m.sql)
        .join('\n'),
    );
    db.pragma('user_version = 4');
    db.prepare(
      `INSERT INTO attachments (network, container_id, if_name, netns, state, created_at_ms, updated_at_ms)
       VALUES ('ferry', 'c1', 'eth0', '/var/run/netns/p1', 'committed', 1, 1)`,
    ).run();
    db.prepare(
      `INSERT INTO interfaces (attachment_id, position, container_id, if_name, endpoint_id, nic_type, routes_json, host_if_name, device_mac)
       VALUES (1, 0, 'c1', 'net1', 'c1-net1', 'DelegatedNIC', '[]', 'ens1f0v0', ?)`,
    ).run(HELD);
    const device = db.prepare(
      `INSERT INTO devices (mac, grp, host_if_name, present, interface_id, reserved_namespace, reserved_pod, seen_at_ms)
       VALUES (?, 'sriov', ?, 1, ?, ?, ?, 1)`,
    );
    device.run(HELD, 'ens1f0v0', 1, null, null);
    device.run(RESERVED, 'ens1f0v1', null, 'shop', 'db-0');
    device.run(AWAY, 'ens1f0v3', null, null, null);
    db.close();
  };
  const { node, inventory, w } = useSriov(t, { prepare: seed });
  // Keyed by MAC after the migration itself: SQL knows no PCI addresses.
  expect(ids(inventory)).toEqual([
    [HELD, HELD, 'assigned'],
    [RESERVED, RESERVED, 'free'],
    [AWAY, AWAY, 'free'],
  ]);
  // The first scan: sysfs lists the reserved one at VF 1; the held one is in its pod (not on the node),
  // so it keeps its MAC key for now; the one gone since long before the upgrade leaves (grace period).
  node.links = [link(11, 'ens1f0v1', RESERVED)];
  w.clock.now += 1_000;
  await inventory.scan();
  expect(ids(inventory)).toEqual([
    [VF[1], RESERVED, 'free'],
    [HELD, HELD, 'assigned'],
  ]);
  expect(inventory.list()[0]?.reservation).toMatchObject({ namespace: 'shop', pod: 'db-0' });
  expect(inventory.list()[1]?.assignedTo).toMatchObject({ containerId: 'c1', ifName: 'net1' });
  // Its pod's DEL brings the held one home: from then on it too is its PCI address.
  w.attachments.release('c1', 'ferry', 'eth0');
  node.links = [link(10, 'ens1f0v0', HELD), link(11, 'ens1f0v1', RESERVED)];
  await inventory.scan();
  expect(ids(inventory)).toEqual([
    [VF[0], HELD, 'free'],
    [VF[1], RESERVED, 'free'],
  ]);
});

test('a device two groups match is refused at the first scan naming both; a later one is left out', async (t) => {
  const config: FerrydConfig['delegatedDevices'] = [
    { drivers: ['iavf'], group: 'fast', nicType: 'DelegatedNIC' },
    { pfNames: ['ens1f0#1-3'], group: 'dpdk', nicType: 'DelegatedNIC' },
  ];
  const { node, inventory } = useSriov(t, { config });
  node.links = [link(10, 'ens1f0v0', '02:00:00:00:00:a0'), link(11, 'ens1f0v1', '02:00:00:00:00:a1')];
  await expect(inventory.scan()).rejects.toThrow(
    'delegatedDevices: device 0000:3b:02.1 (ens1f0v1) is matched by the groups "fast" and "dpdk": a device may be in one group only; narrow the selectors',
  );
  await inventory.scan();
  expect(ids(inventory)).toEqual([[VF[0], '02:00:00:00:00:a0', 'free']]);
});

test('a userspace device two groups match is refused at the first scan as a netdev is; later it is left out', async (t) => {
  const config: FerrydConfig['delegatedDevices'] = [
    { drivers: ['vfio-pci'], group: 'dpdk', nicType: 'DelegatedNIC' },
    { drivers: ['vfio-pci'], pfNames: ['ens1f0#2'], group: 'dpdk-pinned', nicType: 'DelegatedNIC' },
  ];
  const { tree, inventory } = useSriov(t, { config });
  for (const vf of [VF[2], VF[3]]) {
    tree.setNetdev(vf, undefined);
    tree.setDriver(vf, 'vfio-pci');
  }
  await expect(inventory.scan()).rejects.toThrow(
    'delegatedDevices: device 0000:3b:02.2 (bound to vfio-pci) is matched by the groups "dpdk" and "dpdk-pinned": a device may be in one group only; narrow the selectors',
  );
  await inventory.scan();
  expect(ids(inventory)).toEqual([[VF[3], undefined, 'free']]);
});
