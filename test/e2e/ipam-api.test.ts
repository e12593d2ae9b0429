/**
 * ferryd's cluster IPAM client (packages/cns-daemon/src/kube/ipam-api.ts) in-process against the
 * stand-in API server as a real process on loopback, serving deploy/crds: the real client library over
 * real HTTP. Claims are create-if-absent (one of N racing claimers wins), releases delete by uid and take
 * the finalizer off, status writes carry the resourceVersion, a hand-edited object is a problem named,
 * and every failure is typed (the API server away is retryable, nothing else is).
 */
import { ADDRESSES_RELEASED_FINALIZER, type IPBlockSpec } from '@ferry/shared-types/kube/ipam';
import pino from 'pino';
import { describe, expect, test } from 'vitest';
import { KubeApiError } from '../../packages/cns-daemon/src/kube/api-error';
import { loadKubeConfig } from '../../packages/cns-daemon/src/kube/connection';
import { IpamApi } from '../../packages/cns-daemon/src/kube/ipam-api';
import { type KubeApi, nodeObject, useKubeApi } from '../fixtures/kube-api';
import type { Scope } from '../fixtures/scope';
import { waitFor } from '../fixtures/wait';

const BLOCK = 'ferry.v4.10-244-3-0-26';
const spec = (node: string, cidr = '10.244.3.0/26'): IPBlockSpec => ({ network: 'ferry', family: 4, cidr, node });
const ref = (name: string) => ({ apiVersion: 'ferry.dev/v1alpha1', kind: 'IPBlock', name });
const log = pino({ level: 'silent' });

/** The API server with nodes a, b, c and their uids. */
async function cluster(t: Scope, opts: { crds?: string[] } = {}) {
  const api = await useKubeApi(t, opts);
  const uids: Record<string, string> = {};
  for (const n of ['node-a', 'node-b', 'node-c']) {
    await api.put(nodeObject(n, ['192.0.2.1'], []));
  }
  const client = ipamApi(api);
  const nodes = await fetch(`${api.url}/api/v1/nodes`).then(
    (r) => r.json() as Promise<{ items: { metadata: { name: string; uid: string } }[] }>,
  );
  for (const n of nodes.items) uids[n.metadata.name] = n.metadata.uid;
  return { api, client, uids };
}

const ipamApi = (api: KubeApi, timeoutMs = 5000) => new IpamApi({ kc: loadKubeConfig(api.kubeconfig), timeoutMs });

async function kindOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (err) {
    if (KubeApiError.is(err)) return err.kind;
    throw err;
  }
}

describe('IPBlocks', () => {
  test('a claim creates the one object of the block (labels, owner Node, finalizer); the next claimer is told who holds it', async (t) => {
    const { api, client, uids } = await cluster(t);
    const r = await client.createBlock(spec('node-a'), uids['node-a'] ?? '');
    if (!('created' in r)) throw new Error('not created');
    const b = r.created;
    expect(b.metadata.name).toBe(BLOCK);
    expect(b.metadata.labels).toEqual({ 'ferry.dev/node': 'node-a', 'ferry.dev/network': 'ferry' });
    expect(b.metadata.finalizers).toEqual([ADDRESSES_RELEASED_FINALIZER]);
    expect(b.metadata.ownerReferences).toEqual([
      { apiVersion: 'v1', kind: 'Node', name: 'node-a', uid: uids['node-a'] },
    ]);
    const second = await ipamApi(api).createBlock(spec('node-b'), uids['node-b'] ?? '');
    expect(second).toEqual({ exists: b });
    expect(() => client.createBlock(spec('node-a', '10.244.3.1/26'), 'x')).toThrow(RangeError);
  });

  test('N nodes racing for one block: exactly one is created, the others see its holder', async (t) => {
    const { api, uids } = await cluster(t);
    const clients = ['node-a', 'node-b', 'node-c', 'node-a', 'node-b', 'node-c'].map((n) => ({ n, api: ipamApi(api) }));
    const outcomes = await Promise.all(clients.map((c) => c.api.createBlock(spec(c.n), uids[c.n] ?? '')));
    const winners = outcomes.filter((o) => 'created' in o);
    expect(winners).toHaveLength(1);
    const holder = winners[0] && 'created' in winners[0] ? winners[0].created.spec.node : '';
    for (const o of outcomes) if ('exists' in o) expect(o.exists?.spec.node).toBe(holder);
    expect(await api.listObjects('ferry.dev/v1alpha1', 'IPBlock')).toHaveLength(1);
    const creates = (await api.briefStats()).requestCounts.find(
      (c) => c.verb === 'create' && c.resource === 'ipblocks',
    );
    expect(creates?.count).toBe(6);
  });

  test('status writes carry the resourceVersion: a stale one is a conflict', async (t) => {
    const { client, uids } = await cluster(t);
    const r = await client.createBlock(spec('node-a'), uids['node-a'] ?? '');
    if (!('created' in r)) throw new Error('not created');
    const written = await client.updateBlockStatus(r.created, { assigned: 3 });
    expect(written.status).toEqual({ assigned: 3 });
    expect(written.metadata.generation).toBe(1);
    expect(await kindOf(client.updateBlockStatus(r.created, { assigned: 4 }))).toBe('conflict');
    expect((await client.getBlock(BLOCK))?.status).toEqual({ assigned: 3 });
  });

  test('release: deleted by uid, finalizer off, gone; again is gone; another object under the name is a conflict', async (t) => {
    const { api, client, uids } = await cluster(t);
    const r = await client.createBlock(spec('node-a'), uids['node-a'] ?? '');
    if (!('created' in r)) throw new Error('not created');
    expect(await client.releaseBlock(r.created)).toBe('released');
    expect(await api.getObject(ref(BLOCK))).toBeNull();
    expect(await client.releaseBlock(r.created)).toBe('gone');
    const again = await client.createBlock(spec('node-b'), uids['node-b'] ?? '');
    expect('created' in again).toBe(true);
    expect(await client.releaseBlock(r.created)).toBe('conflict');
    expect(await api.getObject(ref(BLOCK))).not.toBeNull();
  });

  test('release of a block the garbage collector marked (its Node deleted), and one changed between the delete and the finalizer removal', async (t) => {
    const { api, client, uids } = await cluster(t);
    const r = await client.createBlock(spec('node-a'), uids['node-a'] ?? '');
    if (!('created' in r)) throw new Error('not created');
    await api.delete('node-a');
    await waitFor('the block marked for deletion', async () =>
      Boolean((await api.getObject(ref(BLOCK)))?.metadata.deletionTimestamp),
    );
    expect(await client.releaseBlock(r.created)).toBe('released');
    expect(await api.getObject(ref(BLOCK))).toBeNull();

    const b = await client.createBlock(spec('node-b'), uids['node-b'] ?? '');
    if (!('created' in b)) throw new Error('not created');
    // The finalizer removal is held; meanwhile the holder's status write changes the resourceVersion.
    await api.hold('patch');
    const releasing = client.releaseBlock(b.created);
    await api.held('patch');
    const marked = await api.getObject(ref(BLOCK));
    if (!marked) throw new Error('no block');
    await api.putObject({ ...marked, status: { assigned: 1 } }, { subresource: 'status' });
    await api.release('patch');
    expect(await releasing).toBe('released');
    expect(await api.getObject(ref(BLOCK))).toBeNull();
    // The first release's finalizer removal, then the second's: stale (409), re-read, done.
    const patches = (await api.stats()).patches.map((p) => p.code);
    expect(patches).toEqual([200, 409, 200]);
  });

  test('list by label; a hand-edited object the schema refuses is listed as invalid, naming the field', async (t) => {
    const { api, client, uids } = await cluster(t);
    await client.createBlock(spec('node-a'), uids['node-a'] ?? '');
    await client.createBlock(spec('node-b', '10.244.3.64/26'), uids['node-b'] ?? '');
    await api.putObject({
      ...ref('hostile'),
      metadata: { name: 'hostile', labels: { 'ferry.dev/node': 'node-a' } },
      spec: { network: 'ferry', family: 4, cidr: 'not-a-cidr', node: 'node-a' },
    });
    const a = await client.listBlocks({ node: 'node-a' });
    expect(a.items.map((b) => b.metadata.name)).toEqual([BLOCK]);
    expect(a.invalid).toEqual([{ name: 'hostile', problem: expect.stringMatching(/^spec\.cidr: /) }]);
    expect((await client.listBlocks({ network: 'ferry' })).items).toHaveLength(2);
    expect(await kindOf(client.getBlock('hostile'))).toBe('invalid');
  });
});

describe('IPClaims and IPRanges', () => {
  test('a static address is claimed once cluster-wide; the second claimer reads the owner; the holder deletes it', async (t) => {
    const { client, uids } = await cluster(t);
    const claim = {
      address: '198.51.100.5',
      node: 'node-a',
      network: 'sriov',
      ifName: 'net1',
      pod: { namespace: 'a', name: 'web-1', uid: 'pod-1' },
    };
    const r = await client.createClaim(claim, uids['node-a'] ?? '');
    if (!('created' in r)) throw new Error('not created');
    expect(r.created.metadata.name).toBe('v4.198-51-100-5');
    const other = await client.createClaim(
      { ...claim, node: 'node-b', pod: { namespace: 'b', name: 'db-1', uid: 'pod-2' } },
      uids['node-b'] ?? '',
    );
    expect('exists' in other && other.exists?.spec.pod).toEqual({ namespace: 'a', name: 'web-1', uid: 'pod-1' });
    expect((await client.getClaim('v4.198-51-100-5'))?.spec.node).toBe('node-a');
    expect(await client.deleteClaim(r.created)).toBe('released');
    expect(await client.getClaim('v4.198-51-100-5')).toBeUndefined();
    expect((await client.listClaims()).items).toEqual([]);
  });

  test('applyRange creates, leaves an equal spec alone, patches a changed one; status under resourceVersion', async (t) => {
    const { api, client } = await cluster(t);
    const range = { network: 'ferry', family: 4 as const, cidr: '10.244.0.0/16', blockPrefixLength: 26 };
    const r0 = await client.applyRange(range);
    expect(r0.metadata.name).toBe('ferry.v4');
    expect((await client.applyRange(range)).metadata.resourceVersion).toBe(r0.metadata.resourceVersion);
    const r1 = await client.applyRange({ ...range, cidr: '10.240.0.0/12' });
    expect(r1.metadata.generation).toBe(2);
    const s = await client.updateRangeStatus(r1, { blocksTotal: 16384, blocksHeld: 0, blocksFree: 16384 });
    expect(s.status?.blocksFree).toBe(16384);
    expect(await kindOf(client.updateRangeStatus(r1, { blocksTotal: 1 }))).toBe('conflict');
    expect((await client.getRange('ferry', 4))?.spec.cidr).toBe('10.240.0.0/12');
    expect((await api.briefStats()).requestCounts).toContainEqual({
      verb: 'update',
      group: 'ferry.dev',
      resource: 'ipranges/status',
      count: 2,
    });
  });
});

describe('failures are typed', () => {
  test('the API server away is unavailable (retryable); refusals are forbidden, invalid; CRDs not installed are gone', async (t) => {
    const { api, client, uids } = await cluster(t);
    await api.failNext('create', 403);
    expect(await kindOf(client.createBlock(spec('node-a'), uids['node-a'] ?? ''))).toBe('forbidden');
    await api.failNext('get', 503);
    expect(await kindOf(client.getBlock(BLOCK))).toBe('unavailable');
    await api.failNext('create', 422);
    expect(
      await kindOf(
        client.createClaim(
          {
            address: '198.51.100.5',
            node: 'node-a',
            network: 'n',
            ifName: 'net1',
            pod: { namespace: 'a', name: 'p', uid: 'u' },
          },
          'x',
        ),
      ),
    ).toBe('invalid');
    await api.stop();
    try {
      await client.createBlock(spec('node-a'), uids['node-a'] ?? '');
      throw new Error('expected a failure');
    } catch (err) {
      if (!KubeApiError.is(err)) throw err;
      expect(err.kind).toBe('unavailable');
      expect(err.isRetryable).toBe(true);
      expect(err.message).toMatch(/^create ipblocks\.ferry\.dev ferry\.v4\.10-244-3-0-26: kubernetes api: /);
    }
    await api.start();
    const bare = await useKubeApi(t, { crds: [] });
    expect(await kindOf(ipamApi(bare).listBlocks())).toBe('gone');
  });
});

describe('the IPBlock informer', () => {
  test('syncs, follows creates and releases, keeps invalid objects aside, and resumes after the API server was away', async (t) => {
    const { api, client, uids } = await cluster(t);
    await client.createBlock(spec('node-a'), uids['node-a'] ?? '');
    const cache = client.blockCache(log, { initialMs: 50, maxMs: 200 });
    t.onTestFinished(() => cache.stop());
    let changes = 0;
    cache.onChange(() => {
      changes += 1;
    });
    cache.start();
    await waitFor('synced', async () => cache.hasSynced());
    expect(cache.list().map((b) => b.spec.node)).toEqual(['node-a']);
    const b = await client.createBlock(spec('node-b', '10.244.3.64/26'), uids['node-b'] ?? '');
    await waitFor('the new block', async () => cache.list().length === 2);
    await api.putObject({
      ...ref('hostile'),
      metadata: { name: 'hostile' },
      spec: { network: 'ferry', family: 4, cidr: '10.244.3.128/26', node: 'Not A Node' },
    });
    await waitFor('the invalid block', async () => cache.invalid().length === 1);
    expect(cache.invalid()[0]).toEqual({ name: 'hostile', problem: expect.stringMatching(/^spec\.node: /) });
    expect(cache.get('hostile')).toBeUndefined();
    await api.stop();
    await waitFor('the watch failing', async () => cache.status().lastError !== null, 10_000);
    await api.start();
    if ('created' in b) expect(await client.releaseBlock(b.created)).toBe('released');
    await waitFor('the release seen after the API server came back', async () => cache.list().length === 1, 15_000);
    expect(cache.status()).toMatchObject({ synced: true, objects: 1, invalid: 1 });
    expect(changes).toBeGreaterThan(0);
  });
});
