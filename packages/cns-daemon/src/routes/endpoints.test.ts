import { createHash } from 'node:crypto';
import type { Allocation } from '@ferry/shared-types/api/allocations';
import { hostVethNameOf } from '@ferry/shared-types/host-veth';
import { expect, test } from 'vitest';
import { DeviceStore } from '../store/devices';
import { type Harness, useApp } from '../testing/harness';

const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');

async function allocate(h: Harness, containerId: string, extra: Record<string, unknown> = {}): Promise<Allocation> {
  const r = await h.app.inject({
    method: 'POST',
    url: '/v1/allocations',
    payload: { network: 'ferry', containerId, ifName: 'eth0', netns: '/proc/self/ns/net', ...extra },
  });
  expect(r.statusCode, r.body).toBe(200);
  return r.json();
}

const releaseIfOnly = (h: Harness, containerId: string, network = 'ferry', hostVethDeleted = 'true') =>
  h.app.inject({
    method: 'DELETE',
    url: `/v1/endpoints/${containerId}?network=${network}&ifName=eth0&hostVethDeleted=${hostVethDeleted}`,
  });

const assigned = (h: Harness) =>
  h.db.prepare('SELECT count(*) AS n FROM addresses WHERE interface_id IS NOT NULL').get() as { n: number };

test('the host veth name is the one the shim derives, and another network gives another name', async (t) => {
  const h = await useApp(t);
  const a = await allocate(h, 'c1');
  expect(a.nics[0]).toMatchObject({
    nicType: 'InfraNIC',
    hostVethName: hostVethNameOf(sha256Hex, 'ferry', 'c1', 'eth0'),
  });
  expect(hostVethNameOf(sha256Hex, 'ferry', 'c1', 'eth0')).toMatch(/^fry[0-9a-f]{12}$/);
  expect(hostVethNameOf(sha256Hex, 'other', 'c1', 'eth0')).not.toBe(hostVethNameOf(sha256Hex, 'ferry', 'c1', 'eth0'));
});

test('hostVethDeleted releases an InfraNIC alone in one request; again, nothing', async (t) => {
  const h = await useApp(t);
  const a = await allocate(h, 'c1');
  const hostVeth = a.nics[0]?.nicType === 'InfraNIC' ? a.nics[0].hostVethName : '';
  expect(assigned(h).n).toBe(2);
  const first = await releaseIfOnly(h, 'c1');
  expect(first.statusCode, first.body).toBe(200);
  expect(first.json().released.map((i: { hostVethName: string }) => i.hostVethName)).toEqual([hostVeth]);
  expect(first.json().toTearDown).toBeUndefined();
  expect(assigned(h).n).toBe(0);
  expect((await h.app.inject({ method: 'GET', url: '/v1/endpoints/c1' })).statusCode).toBe(404);
  expect((await releaseIfOnly(h, 'c1')).json()).toEqual({ released: [] });
});

test('an attachment with a DelegatedNIC is kept whole and handed back with every interface', async (t) => {
  const h = await useApp(t);
  const devices = new DeviceStore(h.db);
  devices.upsert('02:00:00:00:00:01', '02:00:00:00:00:01', 'frontend', 'ens5');
  devices.setPresence('02:00:00:00:00:01', true);
  await allocate(h, 'c1', { delegatedNICs: { group: 'frontend', count: 1 } });
  const r = await releaseIfOnly(h, 'c1');
  expect(r.json().released).toEqual([]);
  expect(r.json().toTearDown.map((i: { ifName: string; nicType: string }) => [i.ifName, i.nicType])).toEqual([
    ['eth0', 'InfraNIC'],
    ['net1', 'DelegatedNIC'],
  ]);
  expect(devices.get('02:00:00:00:00:01')?.interface_id).not.toBeNull();
  expect((await h.app.inject({ method: 'GET', url: '/v1/endpoints/c1' })).json().interfaces).toHaveLength(2);
});

test('hostVethDeleted for another network, or no attachment at all, releases nothing and asks for nothing', async (t) => {
  const h = await useApp(t);
  await allocate(h, 'c1');
  expect((await releaseIfOnly(h, 'c1', 'other')).json()).toEqual({ released: [] });
  expect((await releaseIfOnly(h, 'c2')).json()).toEqual({ released: [] });
  expect(assigned(h).n).toBe(2);
  const bad = await releaseIfOnly(h, 'c1', 'ferry', 'yes');
  expect(bad.statusCode).toBe(400);
  expect(bad.json().msg).toContain('hostVethDeleted');
});
