/** The inventory's scan against the node's links as `ip -j link show` lists them (a fake runner). */
import { Ip, Iproute2 } from '@ferry/net';
import pino from 'pino';
import { expect, type TestContext, test } from 'vitest';
import { addDevice, commitOf, request, stateOf, useAttachments } from '../testing/attachments-world';
import { Inventory } from './inventory';

const MAC = '02:00:00:00:00:01';
const DEVICE = { mac: MAC, group: 'frontend', nicType: 'DelegatedNIC' as const };
const ON_NODE = [{ ifindex: 7, ifname: 'ens1f0', address: MAC, link_type: 'ether', flags: ['UP'] }];

/** A world with the device, and an inventory whose scans list `node.links`. */
function useInventory(t: TestContext) {
  const w = useAttachments(t, { delegatedDevices: [DEVICE] });
  addDevice(w, MAC, 'frontend', 'ens1f0');
  const node = { links: [] as unknown[] };
  const ip = new Ip(new Iproute2(async () => ({ exitCode: 0, stdout: JSON.stringify(node.links), stderr: '' })));
  return { w, node, inventory: inventoryOf(w, ip) };
}

/** The inventory of the world's device, listing the node's links through `ip`. */
function inventoryOf(w: ReturnType<typeof useAttachments>, ip: Ip): Inventory {
  return new Inventory({
    db: w.db,
    devices: w.devices,
    ip,
    config: [DEVICE],
    log: pino({ level: 'silent' }),
    now: () => w.clock.now,
    goneGraceSec: 300,
  });
}

test('a scan while a pod holds its device leaves it present: released (brought home by the DEL), it is free at once, not after the next scan', async (t) => {
  const { w, node, inventory } = useInventory(t);
  const ask = { delegatedNICs: { group: 'frontend', count: 1 } };
  const { plan } = w.attachments.allocate(request('c1', ask));
  w.attachments.commit('c1', commitOf(plan));
  // The device is in the pod: the node's listing does not have it.
  w.clock.now += 1_000;
  await inventory.scan();
  expect(stateOf(w, MAC)).toBe('assigned');

  // The DEL brings it home and releases the attachment; the next pod's ADD comes before any scan.
  node.links = ON_NODE;
  w.attachments.release('c1', 'ferry', 'eth0');
  expect(stateOf(w, MAC)).toBe('free');
  const next = w.attachments.allocate(request('c2', ask)).plan;
  expect(next.nics.map((n) => [n.nicType, 'mac' in n ? n.mac : null])).toEqual([
    ['InfraNIC', null],
    ['DelegatedNIC', MAC],
  ]);
});

test('a free device not on the node is missing after a scan, and free again once a scan finds it', async (t) => {
  const { w, node, inventory } = useInventory(t);
  await inventory.scan();
  expect(stateOf(w, MAC)).toBe('missing');
  node.links = ON_NODE;
  await inventory.scan();
  expect(stateOf(w, MAC)).toBe('free');
});

test("a device's link event is applied at once, before any scan: gone is missing, back is free, held by a pod stays assigned", async (t) => {
  const { w, node, inventory } = useInventory(t);
  node.links = ON_NODE;
  await inventory.scan();
  let updates = 0;
  inventory.onUpdated(() => updates++);
  const event = { ifindex: 7, ifname: 'ens1f0', mac: MAC.toUpperCase(), hasCarrier: true };
  expect(inventory.concerns({ ...event, kind: 'deleted' })).toBe(true);
  inventory.applyLinkEvent({ ...event, kind: 'deleted' });
  expect([stateOf(w, MAC), updates]).toEqual(['missing', 1]);
  inventory.applyLinkEvent({ ...event, kind: 'changed' });
  expect([stateOf(w, MAC), updates]).toEqual(['free', 2]);

  const { plan } = w.attachments.allocate(request('c1', { delegatedNICs: { group: 'frontend', count: 1 } }));
  w.attachments.commit('c1', commitOf(plan));
  // Moved into the pod: the node's namespace announces it gone.
  inventory.applyLinkEvent({ ...event, kind: 'deleted' });
  expect(stateOf(w, MAC)).toBe('assigned');

  // Another link is no concern of the inventory's, and changes nothing.
  const other = { kind: 'deleted' as const, ifindex: 9, ifname: 'fry0', mac: '02:00:00:00:00:09', hasCarrier: false };
  expect(inventory.concerns(other)).toBe(false);
  const before = updates;
  inventory.applyLinkEvent(other);
  expect(updates).toBe(before);
});

test('scans run one at a time: a scan asked for during another lists the links after it', async (t) => {
  const w = useAttachments(t, { delegatedDevices: [DEVICE] });
  addDevice(w, MAC, 'frontend', 'ens1f0');
  let listing = 0;
  let most = 0;
  const ip = new Ip(
    new Iproute2(async () => {
      most = Math.max(most, ++listing);
      await new Promise((r) => setTimeout(r, 20));
      listing--;
      return { exitCode: 0, stdout: JSON.stringify(ON_NODE), stderr: '' };
    }),
  );
  const inventory = inventoryOf(w, ip);
  await Promise.all([inventory.scan(), inventory.scan(), inventory.scan()]);
  expect(most).toBe(1);
});
