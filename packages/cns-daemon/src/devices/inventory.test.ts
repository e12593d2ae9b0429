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
  const log = pino({ level: 'silent' });
  const inventory = new Inventory({
    db: w.db,
    devices: w.devices,
    ip,
    config: [DEVICE],
    log,
    now: () => w.clock.now,
    goneGraceSec: 300,
  });
  return { w, node, inventory };
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
