import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Allocation } from '@ferry/shared-types/api/allocations';
import { Code } from '@ferry/shared-types/errors';
import pino from 'pino';
import { expect, test } from 'vitest';
import { buildServices } from './services';
import { openDatabase } from './store/db';
import { type Harness, tempDir, testConfig, useApp } from './testing/harness';

// A netns path that exists, so the node checks of the invariant report see a live pod.
const attach = (containerId: string, ifName = 'eth0') => ({
  network: 'ferry',
  containerId,
  ifName,
  netns: '/proc/self/ns/net',
  pod: { namespace: 'default', name: `pod-${containerId}`, uid: `uid-${containerId}` },
});

async function allocate(h: Harness, containerId: string, ifName = 'eth0'): Promise<Allocation> {
  const r = await h.app.inject({ method: 'POST', url: '/v1/allocations', payload: attach(containerId, ifName) });
  expect(r.statusCode, r.body).toBe(200);
  return r.json();
}

test('allocate → commit → get → release round trip', async (t) => {
  const h = await useApp(t);
  const a = await allocate(h, 'c1');
  expect(a.generation).toBeGreaterThan(0);
  expect(a.nics).toHaveLength(1);
  const infra = a.nics[0];
  if (infra?.nicType !== 'InfraNIC') throw new Error('expected an InfraNIC first');
  expect(infra.endpointId).toBe('c1');
  expect(infra.hostVethName).toMatch(/^fry[0-9a-f]{12}$/);
  expect(infra.addresses.map((x) => x.address)).toEqual(['10.244.1.1/32', 'fd00:10:244:1::1/128']);
  expect(infra.routes).toEqual([
    { dst: '0.0.0.0/0', gw: '169.254.1.1' },
    { dst: '::/0', gw: 'fe80::ecee:eeff:feee:eeee' },
  ]);

  const commit = await h.app.inject({
    method: 'PUT',
    url: '/v1/endpoints/c1',
    payload: {
      network: 'ferry',
      ifName: 'eth0',
      generation: a.generation,
      nics: [{ ifName: 'eth0', mac: '0a:58:0a:f4:01:01', containerIfIndex: 2 }],
    },
  });
  expect(commit.statusCode, commit.body).toBe(200);
  const got = await h.app.inject({ method: 'GET', url: '/v1/endpoints/c1' });
  expect(got.statusCode).toBe(200);
  expect(got.json().interfaces[0]).toMatchObject({
    containerId: 'c1',
    ifName: 'eth0',
    endpointId: 'c1',
    nicType: 'InfraNIC',
    netns: '/proc/self/ns/net',
    state: 'committed',
    mac: '0a:58:0a:f4:01:01',
    containerIfIndex: 2,
    pod: { namespace: 'default', name: 'pod-c1', uid: 'uid-c1' },
  });

  for (const n of [1, 2]) {
    const rel = await h.app.inject({ method: 'DELETE', url: '/v1/endpoints/c1?network=ferry&ifName=eth0' });
    expect(rel.statusCode, `release #${n}`).toBe(200);
    expect(rel.json().released).toHaveLength(n === 1 ? 1 : 0);
  }
  const gone = await h.app.inject({ method: 'GET', url: '/v1/endpoints/c1' });
  expect(gone.statusCode).toBe(404);
  expect(gone.json().code).toBe(Code.EndpointNotFound);
});

test('allocation is idempotent per attachment; a new containerId gets new addresses', async (t) => {
  const h = await useApp(t);
  const first = await allocate(h, 'c1');
  const again = await allocate(h, 'c1');
  expect(again).toEqual(first);
  const other = await allocate(h, 'c2');
  expect(other.nics[0]?.addresses).not.toEqual(first.nics[0]?.addresses);
});

test('a released address waits out the cooldown before anyone gets it again', async (t) => {
  const h = await useApp(t, {
    cooldownSec: 30,
    networks: [{ name: 'ferry', ipv4: { subnet: '10.9.0.0/30' } }],
  });
  // A /30 has two allocatable addresses: .1 and .2.
  const a = await allocate(h, 'c1');
  await allocate(h, 'c2');
  await h.app.inject({ method: 'DELETE', url: '/v1/endpoints/c1?network=ferry&ifName=eth0' });
  const full = await h.app.inject({ method: 'POST', url: '/v1/allocations', payload: attach('c3') });
  expect(full.statusCode).toBe(409);
  expect(full.json()).toMatchObject({ code: Code.PoolExhausted });
  expect(full.json().msg).toContain('10.9.0.0/30 is exhausted');

  h.clock.now += 30_000;
  const reused = await allocate(h, 'c3');
  expect(reused.nics[0]?.addresses).toEqual(a.nics[0]?.addresses);
});

test('exhaustion leaves nothing half-assigned across families', async (t) => {
  const h = await useApp(t, {
    networks: [{ name: 'ferry', ipv4: { subnet: '10.9.0.0/30' }, ipv6: { subnet: 'fd00::/64' } }],
  });
  await allocate(h, 'c1');
  await allocate(h, 'c2');
  const r = await h.app.inject({ method: 'POST', url: '/v1/allocations', payload: attach('c3') });
  expect(r.json().code).toBe(Code.PoolExhausted);
  const addrs = await h.app.inject({ method: 'GET', url: '/v1/operator/addresses' });
  // Two pods, two families: four rows, none for c3 (its IPv6 pick was rolled back with the IPv4 failure).
  expect(
    addrs
      .json()
      .addresses.map((x: { containerId: string }) => x.containerId)
      .sort(),
  ).toEqual(['c1', 'c1', 'c2', 'c2']);
  const eps = await h.app.inject({ method: 'GET', url: '/v1/operator/endpoints' });
  expect(eps.json().endpoints.map((e: { containerId: string }) => e.containerId)).toEqual(['c1', 'c2']);
});

test('exclusions and ranges are honoured', async (t) => {
  const h = await useApp(t, {
    networks: [
      {
        name: 'ferry',
        ipv4: {
          subnet: '10.9.0.0/24',
          rangeStart: '10.9.0.10',
          rangeEnd: '10.9.0.13',
          exclude: ['10.9.0.11', '10.9.0.12/31'],
        },
      },
    ],
  });
  const a = await allocate(h, 'c1');
  expect(a.nics[0]?.addresses[0]?.address).toBe('10.9.0.10/32');
  const r = await h.app.inject({ method: 'POST', url: '/v1/allocations', payload: attach('c2') });
  expect(r.json().code).toBe(Code.PoolExhausted);
});

test('commit refuses a stale generation, an unknown interface and a missing allocation', async (t) => {
  const h = await useApp(t);
  const a = await allocate(h, 'c1');
  const commit = (payload: object) => h.app.inject({ method: 'PUT', url: '/v1/endpoints/c1', payload });
  const base = {
    network: 'ferry',
    ifName: 'eth0',
    nics: [{ ifName: 'eth0', mac: '0a:58:00:00:00:01', containerIfIndex: 3 }],
  };
  expect((await commit({ ...base, generation: a.generation + 1 })).json().code).toBe(Code.AttachmentConflict);
  const unknownNic = await commit({ ...base, generation: a.generation, nics: [{ ...base.nics[0], ifName: 'net9' }] });
  expect(unknownNic.json()).toMatchObject({ code: Code.InvalidConfig });
  const none = await h.app.inject({ method: 'PUT', url: '/v1/endpoints/nope', payload: { ...base, generation: 1 } });
  expect(none.statusCode).toBe(404);
  expect(none.json().code).toBe(Code.EndpointNotFound);
});

test('the same container and ifName cannot be attached to two networks', async (t) => {
  const h = await useApp(t, {
    networks: [
      { name: 'ferry', ipv4: { subnet: '10.9.0.0/24' } },
      { name: 'other', ipv4: { subnet: '10.10.0.0/24' } },
    ],
  });
  await allocate(h, 'c1');
  const r = await h.app.inject({
    method: 'POST',
    url: '/v1/allocations',
    payload: { ...attach('c1'), network: 'other' },
  });
  expect(r.statusCode).toBe(409);
  expect(r.json().code).toBe(Code.AttachmentConflict);
  // A release for the wrong network does not touch the attachment.
  const rel = await h.app.inject({ method: 'DELETE', url: '/v1/endpoints/c1?network=other&ifName=eth0' });
  expect(rel.json().released).toEqual([]);
  expect((await h.app.inject({ method: 'GET', url: '/v1/endpoints/c1' })).statusCode).toBe(200);
});

test('GC removes every attachment of the network that is not valid, and keeps going', async (t) => {
  const h = await useApp(t, {
    networks: [
      { name: 'ferry', ipv4: { subnet: '10.9.0.0/24' } },
      { name: 'other', ipv4: { subnet: '10.10.0.0/24' } },
    ],
  });
  await allocate(h, 'keep');
  await allocate(h, 'stale1');
  await allocate(h, 'stale2', 'eth1');
  await h.app.inject({ method: 'POST', url: '/v1/allocations', payload: { ...attach('elsewhere'), network: 'other' } });
  const r = await h.app.inject({
    method: 'POST',
    url: '/v1/gc',
    payload: { network: 'ferry', validAttachments: [{ containerId: 'keep', ifName: 'eth0' }] },
  });
  expect(r.statusCode, r.body).toBe(200);
  expect(
    r
      .json()
      .removed.map((x: { containerId: string }) => x.containerId)
      .sort(),
  ).toEqual(['stale1', 'stale2']);
  expect(r.json().errors).toEqual([]);
  const left = await h.app.inject({ method: 'GET', url: '/v1/operator/endpoints' });
  expect(left.json().endpoints.map((e: { containerId: string }) => e.containerId)).toEqual(['keep', 'elsewhere']);
});

test('ADD is refused with code 11 until ferryd is ready and while it drains; release keeps working', async (t) => {
  const h = await useApp(t, {}, { ready: false });
  const r = await h.app.inject({ method: 'POST', url: '/v1/allocations', payload: attach('c1') });
  expect(r.statusCode).toBe(503);
  expect(r.json()).toMatchObject({ code: Code.TryAgainLater });
  expect((await h.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(503);
  h.services.deps.lifecycle.markReady();
  await allocate(h, 'c1');
  h.services.deps.lifecycle.markDraining();
  expect((await h.app.inject({ method: 'GET', url: '/readyz' })).json()).toEqual({
    ready: false,
    phase: 'draining',
    reason: 'ferryd is draining',
  });
  const rel = await h.app.inject({ method: 'DELETE', url: '/v1/endpoints/c1?network=ferry&ifName=eth0' });
  expect(rel.statusCode).toBe(200);
  expect(rel.json().released).toHaveLength(1);
});

test.for([
  ['POST', '/v1/allocations', { ...attach('c1'), network: '../etc' }, 'body: network: must match'],
  ['POST', '/v1/allocations', { ...attach('c1'), containerId: 'a/b' }, 'body: containerId: must match'],
  ['POST', '/v1/allocations', { ...attach('c1'), ifName: 'x'.repeat(16) }, 'body: ifName: is longer than 15 bytes'],
  ['POST', '/v1/allocations', { ...attach('c1'), extra: 1 }, 'invalid request body: (root): unknown field "extra"'],
  ['POST', '/v1/allocations', { ...attach('c1'), network: 'nope' }, 'network "nope" is not configured'],
  ['GET', '/v1/endpoints/..%2Fetc', undefined, 'params: containerId: must match'],
  ['DELETE', '/v1/endpoints/c1', undefined, 'querystring: network: '],
  ['PUT', '/v1/endpoints/c1', { network: 'ferry', ifName: 'eth0', generation: 1, nics: [] }, 'body: nics: '],
] as const)('%s %s with bad input → 4xx naming the problem, no change', async ([method, url, payload, msg], t) => {
  const h = await useApp(t);
  const r = await h.app.inject({ method, url, ...(payload ? { payload } : {}) });
  expect(r.statusCode).toBeGreaterThanOrEqual(400);
  expect(r.statusCode).toBeLessThan(500);
  expect(r.json().msg).toContain(msg);
  const eps = await h.app.inject({ method: 'GET', url: '/v1/operator/endpoints' });
  expect(eps.json().endpoints).toEqual([]);
});

test('malformed JSON is a decode failure, an unknown route a 404, both CNI-shaped', async (t) => {
  const h = await useApp(t);
  const r = await h.app.inject({
    method: 'POST',
    url: '/v1/allocations',
    headers: { 'content-type': 'application/json' },
    payload: '{"network":',
  });
  expect(r.statusCode).toBe(400);
  expect(r.json().code).toBe(Code.DecodeFailure);
  const nf = await h.app.inject({ method: 'GET', url: '/v2/nothing' });
  expect(nf.statusCode).toBe(404);
  expect(nf.json()).toEqual({ code: Code.NotFound, msg: 'route GET /v2/nothing not found' });
});

test('the version-skew rule: every answer states API 1; a shim of another API is refused first, naming both', async (t) => {
  const h = await useApp(t);
  const ask = (ferryApi?: string | string[]) =>
    h.app.inject({
      method: 'POST',
      url: '/v1/allocations',
      payload: attach('c1'),
      ...(ferryApi === undefined ? {} : { headers: { 'ferry-api': ferryApi } }),
    });
  const newer = await ask('2');
  expect(newer.statusCode).toBe(400);
  expect(newer.headers['ferry-api']).toBe('1');
  expect(newer.json()).toEqual({
    code: Code.ApiVersionSkew,
    msg: "ferry-cni speaks API 2, ferryd API 1: ferryd is older than ferry-cni; finish rolling out the ferryd DaemonSet (each of its pods installs the ferry-cni of its own release), or install the ferry-cni of ferryd's release",
  });
  for (const garbled of ['', 'v1', ['1', '1']]) {
    const r = await ask(garbled);
    expect(r.json(), JSON.stringify(garbled)).toMatchObject({
      code: Code.ApiVersionSkew,
      msg: expect.stringContaining('(none stated)'),
    });
  }
  // Refused before the request was read: nothing was allocated.
  expect((await h.app.inject({ method: 'GET', url: '/v1/endpoints/c1' })).statusCode).toBe(404);
  const same = await ask('1');
  expect(same.statusCode, same.body).toBe(200);
  expect(same.headers['ferry-api']).toBe('1');
  // Without the header (ferryctl, curl): served, and told the version too.
  const plain = await h.app.inject({ method: 'GET', url: '/v1/endpoints/c1' });
  expect(plain.statusCode).toBe(200);
  expect(plain.headers['ferry-api']).toBe('1');
  expect((await h.app.inject({ method: 'GET', url: '/nope' })).headers['ferry-api']).toBe('1');
});

test('operator pools, addresses, metrics and OpenAPI', async (t) => {
  const h = await useApp(t);
  await allocate(h, 'c1');
  const pools = (await h.app.inject({ method: 'GET', url: '/v1/operator/pools' })).json().pools;
  expect(pools).toEqual([
    expect.objectContaining({ family: 4, subnet: '10.244.1.0/24', size: '254', assigned: 1, free: '253' }),
    expect.objectContaining({ family: 6, size: (2n ** 64n - 1n).toString(), assigned: 1 }),
  ]);
  // A queued DEL, 90 s old: both queue gauges come from one look at the queue.
  mkdirSync(h.config.deleteQueue, { recursive: true });
  const entry = { version: 1, network: 'ferry', containerId: 'c9', ifName: 'eth0', netns: '' };
  writeFileSync(
    join(h.config.deleteQueue, `${'a'.repeat(32)}.json`),
    JSON.stringify({ ...entry, queuedAt: new Date(h.clock.now - 90_000).toISOString() }),
  );
  const metrics = await h.app.inject({ method: 'GET', url: '/metrics' });
  expect(metrics.body).toContain('ferry_delete_queue{state="pending"} 1');
  expect(metrics.body).toContain('ferry_delete_queue_oldest_age_seconds 90');
  // Applied entries are a counter of their own (a count since start is no gauge's state).
  expect(metrics.body).toContain('# TYPE ferry_delete_queue_applied_total counter\nferry_delete_queue_applied_total 0');
  expect(metrics.body).not.toContain('state="applied"');
  // Every error code is a series before its first error (an alert's increase() needs the 0).
  expect(metrics.body).toContain('ferry_errors_total{code="100"} 0');
  expect(metrics.body).toContain('ferry_addresses{network="ferry",family="4",state="Assigned"} 1');
  expect(metrics.body).toContain('ferry_endpoints{network="ferry",nic_type="InfraNIC"} 1');
  const doc = (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json();
  expect(doc.openapi).toBe('3.1.0');
  expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/v1/allocations', '/v1/endpoints/{containerId}']));
});

test('the TCP surface has no shim routes and checks bearer tokens', async (t) => {
  const tokens = { read: 'r'.repeat(20), admin: 'a'.repeat(20) };
  const h = await useApp(t, {}, { surface: 'tcp', tokens });
  expect((await h.app.inject({ method: 'POST', url: '/v1/allocations', payload: attach('c1') })).statusCode).toBe(404);
  const anon = await h.app.inject({ method: 'GET', url: '/v1/operator/pools' });
  expect(anon.statusCode).toBe(401);
  expect(anon.json().code).toBe(Code.Unauthorized);
  const auth = (tok: string) => ({ authorization: `Bearer ${tok}` });
  expect(
    (await h.app.inject({ method: 'GET', url: '/v1/operator/pools', headers: auth(tokens.read) })).statusCode,
  ).toBe(200);
  const ro = await h.app.inject({ method: 'DELETE', url: '/v1/operator/endpoints/c1', headers: auth(tokens.read) });
  expect(ro.statusCode).toBe(403);
  const admin = await h.app.inject({ method: 'DELETE', url: '/v1/operator/endpoints/c1', headers: auth(tokens.admin) });
  expect(admin.statusCode).toBe(200);
  expect((await h.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
});

test('the scrape surface serves /metrics and the probes, and nothing of the shim or the operator', async (t) => {
  const h = await useApp(t, {}, { surface: 'metrics' });
  const metrics = await h.app.inject({ method: 'GET', url: '/metrics' });
  expect(metrics.statusCode).toBe(200);
  expect(metrics.headers['content-type']).toContain('text/plain');
  expect(metrics.body).toContain('ferry_ready 1');
  expect((await h.app.inject({ method: 'GET', url: '/healthz' })).json()).toEqual({ ok: true });
  expect((await h.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
  for (const [method, url] of [
    ['POST', '/v1/allocations'],
    ['GET', '/v1/endpoints/c1'],
    ['DELETE', '/v1/endpoints/c1'],
    ['POST', '/v1/gc'],
    ['GET', '/v1/status'],
    ['GET', '/v1/operator/pools'],
    ['GET', '/v1/operator/endpoints'],
    ['GET', '/openapi.json'],
  ] as const) {
    const r = await h.app.inject({ method, url, ...(method === 'POST' ? { payload: attach('c1') } : {}) });
    expect(r.statusCode, `${method} ${url}`).toBe(404);
    expect(r.json().code, `${method} ${url}`).toBe(Code.NotFound);
  }
});

test('operator GC lists endpoints whose netns is gone, or not kept, and releases them only with apply', async (t) => {
  const h = await useApp(t);
  await allocate(h, 'alive');
  await h.app.inject({
    method: 'POST',
    url: '/v1/allocations',
    payload: { ...attach('gone'), netns: '/var/run/netns/ferry-t-never' },
  });
  const dry = await h.app.inject({ method: 'POST', url: '/v1/operator/gc', payload: {} });
  expect(dry.json()).toEqual({
    applied: false,
    candidates: [
      {
        containerId: 'gone',
        ifName: 'eth0',
        network: 'ferry',
        netns: '/var/run/netns/ferry-t-never',
        reason: 'netns-missing',
      },
    ],
  });
  const kept = await h.app.inject({ method: 'POST', url: '/v1/operator/gc', payload: { keep: ['gone'] } });
  expect(kept.json().candidates.map((c: { containerId: string; reason: string }) => [c.containerId, c.reason])).toEqual(
    [
      ['alive', 'not-kept'],
      ['gone', 'netns-missing'],
    ],
  );
  expect((await h.app.inject({ method: 'GET', url: '/v1/operator/endpoints' })).json().endpoints).toHaveLength(2);
  await h.app.inject({ method: 'POST', url: '/v1/operator/gc', payload: { apply: true } });
  const left = (await h.app.inject({ method: 'GET', url: '/v1/operator/endpoints' })).json().endpoints;
  expect(left.map((e: { containerId: string }) => e.containerId)).toEqual(['alive']);
});

test('invariants hold after normal use and report a corrupted store', async (t) => {
  const h = await useApp(t);
  await allocate(h, 'c1');
  await allocate(h, 'c2');
  const ok = await h.app.inject({ method: 'GET', url: '/v1/operator/invariants' });
  expect(ok.json()).toEqual({ ok: true, violations: [] });
  // Break the store behind ferryd's back: c2 loses its IPv4 address row.
  h.db.prepare("DELETE FROM addresses WHERE address = '10.244.1.2'").run();
  const bad = (await h.app.inject({ method: 'GET', url: '/v1/operator/invariants' })).json();
  expect(bad.ok).toBe(false);
  expect(bad.violations).toEqual([
    { kind: 'endpoint-without-address', subject: 'c2/eth0', msg: 'InfraNIC on network "ferry" holds no IPv4 address' },
  ]);
});

const commitBody = (a: Allocation) => ({
  network: 'ferry',
  ifName: 'eth0',
  generation: a.generation,
  nics: [{ ifName: 'eth0', mac: '0a:58:00:00:00:01', containerIfIndex: 3 }],
});

test('a second ADD of a committed attachment is refused (105) and leaves it whole', async (t) => {
  const h = await useApp(t);
  const a = await allocate(h, 'c1');
  const put = await h.app.inject({ method: 'PUT', url: '/v1/endpoints/c1', payload: commitBody(a) });
  expect(put.statusCode, put.body).toBe(200);
  const again = await h.app.inject({ method: 'POST', url: '/v1/allocations', payload: attach('c1') });
  expect(again.statusCode).toBe(409);
  expect(again.json()).toMatchObject({ code: Code.AttachmentConflict });
  expect(again.json().msg).toContain('already set up');
  const ep = await h.app.inject({ method: 'GET', url: '/v1/endpoints/c1' });
  expect(ep.json().interfaces[0]).toMatchObject({ state: 'committed', generation: a.generation });
});

test('a release naming another generation leaves the attachment alone', async (t) => {
  const h = await useApp(t);
  const a = await allocate(h, 'c1');
  const url = (g: number) => `/v1/endpoints/c1?network=ferry&ifName=eth0&generation=${g}`;
  const stale = await h.app.inject({ method: 'DELETE', url: url(a.generation + 1) });
  expect(stale.json().released).toEqual([]);
  expect((await h.app.inject({ method: 'GET', url: '/v1/endpoints/c1' })).statusCode).toBe(200);
  expect((await h.app.inject({ method: 'DELETE', url: url(a.generation) })).json().released).toHaveLength(1);
  const bad = await h.app.inject({ method: 'DELETE', url: '/v1/endpoints/c1?network=ferry&ifName=eth0&generation=x' });
  expect(bad.statusCode).toBe(400);
});

test('a DEL queued before an ADD took the attachment up again does not release it', async (t) => {
  const h = await useApp(t);
  await allocate(h, 'c1');
  const queuedAt = new Date(h.clock.now + 1000).toISOString();
  h.clock.now += 2000;
  await allocate(h, 'c1');
  const entry = { version: 1 as const, network: 'ferry', containerId: 'c1', ifName: 'eth0', netns: '', queuedAt };
  expect(h.services.deps.attachments.releaseQueued(entry)).toBe('stale');
  h.clock.now += 2000;
  expect(h.services.deps.attachments.releaseQueued({ ...entry, queuedAt: new Date(h.clock.now).toISOString() })).toBe(
    'released',
  );
});

test('addresses outside the range (an earlier, wider config) do not use up the pool', async (t) => {
  const h = await useApp(t, {
    networks: [{ name: 'ferry', ipv4: { subnet: '10.9.0.0/29', rangeStart: '10.9.0.5', rangeEnd: '10.9.0.6' } }],
  });
  const poolId = h.services.deps.ipam.network('ferry').pools[0]?.poolId;
  // Rows a wider range left behind, still cooling down: .1 to .4.
  const insert = h.db.prepare(
    `INSERT INTO addresses (pool_id, offset_hex, address, state, interface_id, since_ms, available_at_ms)
     VALUES (?, ?, ?, 'PendingRelease', NULL, ?, ?)`,
  );
  for (const n of [1, 2, 3, 4]) insert.run(poolId, `0000000${n}`, `10.9.0.${n}`, h.clock.now, h.clock.now + 3_600_000);
  const pools = (await h.app.inject({ method: 'GET', url: '/v1/operator/pools' })).json().pools;
  expect(pools[0]).toMatchObject({ size: '2', free: '2' });
  expect((await allocate(h, 'c1')).nics[0]?.addresses[0]?.address).toBe('10.9.0.5/32');
  expect((await allocate(h, 'c2')).nics[0]?.addresses[0]?.address).toBe('10.9.0.6/32');
});

test('a network renamed while its pods hold addresses cannot take over its subnet', async (t) => {
  const dir = tempDir(t);
  const first = testConfig(dir, { networks: [{ name: 'old', ipv4: { subnet: '10.9.0.0/24' } }] });
  const store = openDatabase(first.database);
  t.onTestFinished(() => store.close());
  const opts = { log: pino({ level: 'silent' }), now: () => Date.now(), defaultMetrics: false };
  buildServices(first, store.db, opts).deps.attachments.allocate({ ...attach('c1'), network: 'old' });
  const renamed = testConfig(dir, { networks: [{ name: 'new', ipv4: { subnet: '10.9.0.128/25' } }] });
  expect(() => buildServices(renamed, store.db, opts)).toThrow(
    /subnet 10.9.0.128\/25 overlaps 10.9.0.0\/24 of network "old", which is no longer configured but still holds 1 addresses/,
  );
  const elsewhere = testConfig(dir, { networks: [{ name: 'new', ipv4: { subnet: '10.10.0.0/24' } }] });
  expect(() => buildServices(elsewhere, store.db, opts)).not.toThrow();
});

test("a reservation's static addresses must match their family and stay out of every pool", async (t) => {
  const h = await useApp(t);
  const reserve = (address: string, family: 4 | 6) =>
    h.app.inject({
      method: 'PUT',
      url: '/v1/operator/devices/02:00:00:00:00:01/reservation',
      payload: { namespace: 'shop', pod: 'db-0', addresses: [{ family, address }] },
    });
  const inPool = await reserve('10.244.1.9/32', 4);
  expect(inPool.statusCode).toBe(400);
  expect(inPool.json().msg).toBe(
    'addresses[0].address: "10.244.1.9/32" is inside the pool 10.244.1.0/24 of network "ferry"',
  );
  expect((await reserve('192.0.2.9/32', 6)).json().msg).toContain('"192.0.2.9/32" is not IPv6');
  // Outside every pool it passes this check and meets the next one: the device is unknown here.
  expect((await reserve('192.0.2.9/32', 4)).json().code).toBe(Code.NotFound);
});

test('a 255-character container ID reaches its route; a malformed URL gets a CNI-shaped error', async (t) => {
  const h = await useApp(t);
  const id = 'c'.repeat(255);
  const r = await h.app.inject({ method: 'GET', url: `/v1/endpoints/${id}` });
  expect(r.json()).toMatchObject({ code: Code.EndpointNotFound });
  const bad = await h.app.inject({ method: 'GET', url: '/v1/endpoints/%E0%A4%A' });
  expect(bad.statusCode).toBe(400);
  expect(bad.json()).toMatchObject({ code: Code.InvalidConfig, msg: expect.stringContaining('invalid request') });
});
