/**
 * The stand-in API server (test/fixtures/kube-api-server.mjs) serves custom resources from Ferry's CRD
 * manifests (deploy/crds) and Leases as kube-apiserver's generic registry does: create-if-absent (201,
 * 409 AlreadyExists), updates under resourceVersion (409 Conflict, 422 without one), generation, the
 * status subresource, structural pruning and validation, immutability rules, DELETE preconditions,
 * finalizers and the garbage collector's ownerReferences. Read over plain HTTP, as the wire is: Ferry's
 * IPAM client and leader election are tested against this server elsewhere, and these tests are what
 * makes those mean something.
 */
import { readFileSync } from 'node:fs';
import { CustomResourceDefinition } from 'kubernetes-models/apiextensions.k8s.io/v1';
import { describe, expect, test } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { FERRY_CRDS, type KubeApi, nodeObject, useKubeApi } from '../fixtures/kube-api';
import { openWatch, request, seen } from '../fixtures/kube-wire';

const BLOCKS = '/apis/ferry.dev/v1alpha1/ipblocks';
const RANGES = '/apis/ferry.dev/v1alpha1/ipranges';
const LEASES = '/apis/coordination.k8s.io/v1/namespaces/ferry-system/leases';
const FINALIZER = 'ferry.dev/addresses-released';
/**
 * The tests of the API's rules are an operator's client, not Ferry: no RBAC (Ferry's account may not PUT an
 * IPRange, patch a status, or read Leases outside ferry-system). The RBAC test below is Ferry's.
 */
const UNAUTHORIZED = { serviceAccount: false } as const;

function block(name: string, node = 'node-a', extra: Record<string, unknown> = {}) {
  return {
    apiVersion: 'ferry.dev/v1alpha1',
    kind: 'IPBlock',
    metadata: { name, labels: { 'ferry.dev/node': node, 'ferry.dev/network': 'ferry' } },
    spec: { network: 'ferry', family: 4, cidr: '10.244.3.0/26', node },
    ...extra,
  };
}

interface RangeBody {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; uid?: string };
  spec: Record<string, unknown>;
  status?: Record<string, unknown>;
}

const range = (cidr = '10.244.0.0/16'): RangeBody => ({
  apiVersion: 'ferry.dev/v1alpha1',
  kind: 'IPRange',
  metadata: { name: 'ferry.v4' },
  spec: { network: 'ferry', family: 4, cidr, blockPrefixLength: 26 },
});

async function created(api: KubeApi, path: string, body: unknown) {
  const r = await request(api, 'POST', path, body);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body;
}

test('deploy/crds: every manifest is a valid CustomResourceDefinition the stand-in loads', () => {
  expect(FERRY_CRDS.length).toBe(3);
  for (const file of FERRY_CRDS) {
    for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
      expect(doc.errors, file).toEqual([]);
      const crd = new CustomResourceDefinition(doc.toJSON());
      crd.validate();
      expect(crd.spec.scope, file).toBe('Cluster');
      expect(crd.spec.group, file).toBe('ferry.dev');
      const [v] = crd.spec.versions;
      expect(v?.subresources?.status, file).toEqual({});
      expect(v?.additionalPrinterColumns?.length, file).toBeGreaterThan(0);
    }
  }
});

describe('custom resources: create, read, list', () => {
  test('create sets the server-owned metadata, prunes unknown fields and drops status; a second create of the name is 409 AlreadyExists', async (t) => {
    const api = await useKubeApi(t);
    const body = created(api, BLOCKS, {
      ...block('ferry.v4.10-244-3-0-26'),
      status: { assigned: 3 },
      surplus: 1,
      spec: { ...block('x').spec, color: 'red' },
      metadata: { ...block('ferry.v4.10-244-3-0-26').metadata, bogus: 'x' },
    });
    const b = await body;
    expect(b.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(b.metadata.creationTimestamp).toMatch(/Z$/);
    expect(b.metadata.generation).toBe(1);
    expect(Number(b.metadata.resourceVersion)).toBeGreaterThan(0);
    expect(b.status).toBeUndefined();
    expect(b.surplus).toBeUndefined();
    expect(b.spec).toEqual({ network: 'ferry', family: 4, cidr: '10.244.3.0/26', node: 'node-a' });
    expect(b.metadata.bogus).toBeUndefined();
    expect(b.kind).toBe('IPBlock');

    const again = await request(api, 'POST', BLOCKS, block('ferry.v4.10-244-3-0-26', 'node-b'));
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({
      kind: 'Status',
      reason: 'AlreadyExists',
      message: 'ipblocks.ferry.dev "ferry.v4.10-244-3-0-26" already exists',
      details: { name: 'ferry.v4.10-244-3-0-26', group: 'ferry.dev', kind: 'ipblocks' },
    });
    const got = await request(api, 'GET', `${BLOCKS}/ferry.v4.10-244-3-0-26`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(b);
    const missing = await request(api, 'GET', `${BLOCKS}/nope`);
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({
      reason: 'NotFound',
      details: { name: 'nope', group: 'ferry.dev', kind: 'ipblocks' },
    });
  });

  test('a create carrying metadata.resourceVersion is refused as the storage layer refuses it; generateName makes a name', async (t) => {
    const api = await useKubeApi(t);
    const withRv = block('b1');
    const refused = await request(api, 'POST', BLOCKS, {
      ...withRv,
      metadata: { ...withRv.metadata, resourceVersion: '5' },
    });
    expect(refused.status).toBe(500);
    expect(refused.body.message).toBe('resourceVersion should not be set on objects to be created');
    expect(await api.listObjects('ferry.dev/v1alpha1', 'IPBlock')).toEqual([]);
    const generated = await created(api, BLOCKS, { ...withRv, metadata: { generateName: 'blk-' } });
    expect(generated.metadata.name).toMatch(/^blk-[a-z0-9]{5}$/);
  });

  test('schema validation: required, enum, types, DNS-1123 names and kinds, each a cause of one 422', async (t) => {
    const api = await useKubeApi(t);
    const bad = await request(api, 'POST', BLOCKS, {
      ...block('b1'),
      spec: { network: 'ferry', family: 5, cidr: 10 },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.reason).toBe('Invalid');
    expect(bad.body.details?.kind).toBe('IPBlock');
    expect(bad.body.details?.causes?.map((c) => [c.field, c.reason])).toEqual(
      expect.arrayContaining([
        ['spec.node', 'FieldValueRequired'],
        ['spec.family', 'FieldValueNotSupported'],
        ['spec.cidr', 'FieldValueTypeInvalid'],
      ]),
    );
    expect(bad.body.message).toMatch(/^IPBlock\.ferry\.dev "b1" is invalid: \[/);
    const badName = await request(api, 'POST', BLOCKS, block('Not_DNS'));
    expect(badName.status).toBe(422);
    expect(badName.body.details?.causes?.[0]?.field).toBe('metadata.name');
    const badLabel = await request(api, 'POST', BLOCKS, {
      ...block('b2'),
      metadata: { name: 'b2', labels: { 'ferry.dev/node': 'a b' } },
    });
    expect(badLabel.status).toBe(422);
    const noSpec = await request(api, 'POST', BLOCKS, {
      apiVersion: 'ferry.dev/v1alpha1',
      kind: 'IPBlock',
      metadata: { name: 'b3' },
    });
    expect(noSpec.status).toBe(422);
    expect(noSpec.body.details?.causes?.[0]).toMatchObject({ field: 'spec', reason: 'FieldValueRequired' });
    const wrongKind = await request(api, 'POST', BLOCKS, { ...block('b4'), kind: 'IPClaim' });
    expect(wrongKind.status).toBe(400);
    expect(await api.listObjects('ferry.dev/v1alpha1', 'IPBlock')).toEqual([]);
  });

  test('list with labelSelector (=, !=, exists, !exists, in, notin) and fieldSelector metadata.name', async (t) => {
    const api = await useKubeApi(t);
    await created(api, BLOCKS, block('a1', 'node-a'));
    await created(api, BLOCKS, block('a2', 'node-a'));
    await created(api, BLOCKS, block('b1', 'node-b'));
    await created(api, BLOCKS, { ...block('u1'), metadata: { name: 'u1' } });
    const names = async (query: string) => {
      const r = await request(api, 'GET', `${BLOCKS}?${query}`);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.kind).toBe('IPBlockList');
      expect(r.body.apiVersion).toBe('ferry.dev/v1alpha1');
      return (r.body.items ?? []).map((i) => i.metadata.name).sort();
    };
    const sel = (s: string) => `labelSelector=${encodeURIComponent(s)}`;
    expect(await names(sel('ferry.dev/node=node-a'))).toEqual(['a1', 'a2']);
    expect(await names(sel('ferry.dev/node==node-b'))).toEqual(['b1']);
    expect(await names(sel('ferry.dev/node!=node-a'))).toEqual(['b1', 'u1']);
    expect(await names(sel('ferry.dev/node'))).toEqual(['a1', 'a2', 'b1']);
    expect(await names(sel('!ferry.dev/node'))).toEqual(['u1']);
    expect(await names(sel('ferry.dev/node in (node-b, node-c)'))).toEqual(['b1']);
    expect(await names(sel('ferry.dev/node notin (node-a),ferry.dev/network=ferry'))).toEqual(['b1']);
    expect(await names('fieldSelector=metadata.name%3Da2')).toEqual(['a2']);
    expect((await request(api, 'GET', `${BLOCKS}?fieldSelector=spec.node%3Da`)).status).toBe(400);
    expect((await request(api, 'GET', `${BLOCKS}?${sel('a b c')}`)).status).toBe(400);
    // Custom list items keep their kind and apiVersion, as the API server stores them.
    const all = await request(api, 'GET', BLOCKS);
    expect(all.body.items?.[0]).toMatchObject({ kind: 'IPBlock', apiVersion: 'ferry.dev/v1alpha1' });
  });
});

describe('custom resources: update, status, patch', () => {
  test('PUT needs the current resourceVersion (422 without, 409 when stale, 404 when missing); generation follows spec only', async (t) => {
    const api = await useKubeApi(t, UNAUTHORIZED);
    const r0 = await created(api, RANGES, range());
    const noRv = await request(api, 'PUT', `${RANGES}/ferry.v4`, range('10.0.0.0/8'));
    expect(noRv.status).toBe(422);
    expect(noRv.body.message).toContain(
      'metadata.resourceVersion: Invalid value: 0x0: must be specified for an update',
    );
    const put = (rv: string, body = range('10.0.0.0/8')) =>
      request(api, 'PUT', `${RANGES}/ferry.v4`, { ...body, metadata: { ...body.metadata, resourceVersion: rv } });
    const r1 = await put(r0.metadata.resourceVersion);
    expect(r1.status).toBe(200);
    expect(r1.body.metadata.generation).toBe(2);
    expect(r1.body.metadata.uid).toBe(r0.metadata.uid);
    expect(r1.body.metadata.creationTimestamp).toBe(r0.metadata.creationTimestamp);
    const stale = await put(r0.metadata.resourceVersion);
    expect(stale.status).toBe(409);
    expect(stale.body).toMatchObject({
      reason: 'Conflict',
      message: `Operation cannot be fulfilled on ipranges.ferry.dev "ferry.v4": the object has been modified; please apply your changes to the latest version and try again`,
      details: { name: 'ferry.v4', group: 'ferry.dev', kind: 'ipranges' },
    });
    // Metadata and status are not the spec: no new generation; status is ignored on the main resource.
    const labelled = range('10.0.0.0/8');
    const r2 = await put(r1.body.metadata.resourceVersion, {
      ...labelled,
      metadata: { ...labelled.metadata, labels: { a: 'b' } },
      status: { blocksTotal: 9 },
    });
    expect(r2.status).toBe(200);
    expect(r2.body.metadata.generation).toBe(2);
    expect(r2.body.metadata.labels).toEqual({ a: 'b' });
    expect(r2.body.status).toBeUndefined();
    // Nothing changed: nothing written.
    const same = await put(r2.body.metadata.resourceVersion, {
      ...labelled,
      metadata: { ...labelled.metadata, labels: { a: 'b' } },
    });
    expect(same.body.metadata.resourceVersion).toBe(r2.body.metadata.resourceVersion);
    const missing = await request(api, 'PUT', `${RANGES}/other`, {
      ...range(),
      metadata: { name: 'other', resourceVersion: '1' },
    });
    expect(missing.status).toBe(404);
    const uid = await put(r2.body.metadata.resourceVersion, {
      ...labelled,
      metadata: { ...labelled.metadata, uid: 'another' },
    });
    expect(uid.status).toBe(422);
    expect(uid.body.details?.causes?.[0]?.field).toBe('metadata.uid');
  });

  test('an IPBlock spec is immutable (x-kubernetes-validations self == oldSelf)', async (t) => {
    const api = await useKubeApi(t, UNAUTHORIZED);
    const b = await created(api, BLOCKS, block('b1'));
    const moved = await request(api, 'PUT', `${BLOCKS}/b1`, {
      ...block('b1', 'node-b'),
      metadata: { ...b.metadata },
    });
    expect(moved.status).toBe(422);
    expect(moved.body.details?.causes?.[0]).toMatchObject({
      field: 'spec',
      message: 'Invalid value: "object": spec is immutable',
    });
    const patched = await request(
      api,
      'PATCH',
      `${BLOCKS}/b1`,
      { spec: { node: 'node-b' } },
      'application/merge-patch+json',
    );
    expect(patched.status).toBe(422);
    expect((await api.getObject({ apiVersion: 'ferry.dev/v1alpha1', kind: 'IPBlock', name: 'b1' }))?.spec).toEqual(
      b.spec,
    );
  });

  test('the status subresource changes status only, under resourceVersion, without a new generation', async (t) => {
    const api = await useKubeApi(t, UNAUTHORIZED);
    const b = await created(api, BLOCKS, block('b1'));
    const put = await request(api, 'PUT', `${BLOCKS}/b1/status`, {
      ...block('b1', 'node-b'),
      metadata: { ...b.metadata, labels: { changed: 'yes' } },
      status: { assigned: 5 },
    });
    expect(put.status).toBe(200);
    expect(put.body.status).toEqual({ assigned: 5 });
    expect(put.body.spec).toEqual(b.spec);
    expect(put.body.metadata.labels).toEqual(b.metadata.labels);
    expect(put.body.metadata.generation).toBe(1);
    const stale = await request(api, 'PUT', `${BLOCKS}/b1/status`, {
      ...block('b1'),
      metadata: b.metadata,
      status: { assigned: 6 },
    });
    expect(stale.status).toBe(409);
    const patch = await request(
      api,
      'PATCH',
      `${BLOCKS}/b1/status`,
      { status: { assigned: 7 }, spec: { node: 'x' } },
      'application/merge-patch+json',
    );
    expect(patch.status).toBe(200);
    expect(patch.body.status).toEqual({ assigned: 7 });
    expect(patch.body.spec).toEqual(b.spec);
    const invalid = await request(
      api,
      'PATCH',
      `${BLOCKS}/b1/status`,
      { status: { assigned: -1 } },
      'application/merge-patch+json',
    );
    expect(invalid.status).toBe(422);
    const statusGet = await request(api, 'GET', `${BLOCKS}/b1/status`);
    expect(statusGet.status).toBe(200);
    // The main resource keeps the status the subresource wrote.
    const main = await request(
      api,
      'PATCH',
      `${BLOCKS}/b1`,
      { metadata: { labels: { x: 'y' } }, status: { assigned: 0 } },
      'application/merge-patch+json',
    );
    expect(main.body.status).toEqual({ assigned: 7 });
    expect(main.body.metadata.labels).toMatchObject({ x: 'y' });
    const smp = await request(api, 'PATCH', `${BLOCKS}/b1`, { metadata: {} }, 'application/strategic-merge-patch+json');
    expect(smp.status).toBe(415);
    const staleMerge = await request(
      api,
      'PATCH',
      `${BLOCKS}/b1`,
      { metadata: { resourceVersion: b.metadata.resourceVersion, labels: { z: 'z' } } },
      'application/merge-patch+json',
    );
    expect(staleMerge.status).toBe(409);
  });
});

describe('custom resources: delete, finalizers, garbage collection, watch', () => {
  test('DELETE preconditions; finalizers hold the object marked (MODIFIED), no finalizer can be added, emptying them deletes it (MODIFIED, DELETED)', async (t) => {
    const api = await useKubeApi(t, UNAUTHORIZED);
    const b = await created(api, BLOCKS, {
      ...block('b1'),
      metadata: { ...block('b1').metadata, finalizers: [FINALIZER] },
    });
    const w = await openWatch(api, BLOCKS, `resourceVersion=${b.metadata.resourceVersion}`);
    t.onTestFinished(() => w.close());
    const wrongUid = await request(api, 'DELETE', `${BLOCKS}/b1`, { preconditions: { uid: 'not-it' } });
    expect(wrongUid.status).toBe(409);
    expect(wrongUid.body.message).toContain(
      `Precondition failed: UID in precondition: not-it, UID in object meta: ${b.metadata.uid}`,
    );
    const wrongRv = await request(api, 'DELETE', `${BLOCKS}/b1`, { preconditions: { resourceVersion: '1' } });
    expect(wrongRv.status).toBe(409);
    const marked = await request(api, 'DELETE', `${BLOCKS}/b1`, {
      preconditions: { uid: b.metadata.uid, resourceVersion: b.metadata.resourceVersion },
    });
    expect(marked.status).toBe(200);
    expect(marked.body.metadata.deletionTimestamp).toMatch(/Z$/);
    expect(marked.body.metadata.deletionGracePeriodSeconds).toBe(0);
    expect(marked.body.metadata.generation).toBe(2);
    const twice = await request(api, 'DELETE', `${BLOCKS}/b1`);
    expect(twice.body.metadata.resourceVersion).toBe(marked.body.metadata.resourceVersion);
    const more = await request(
      api,
      'PATCH',
      `${BLOCKS}/b1`,
      { metadata: { finalizers: [FINALIZER, 'ferry.dev/other'] } },
      'application/merge-patch+json',
    );
    expect(more.status).toBe(422);
    expect(more.body.details?.causes?.[0]).toMatchObject({
      field: 'metadata.finalizers',
      reason: 'FieldValueForbidden',
    });
    const release = await request(api, 'PUT', `${BLOCKS}/b1`, {
      ...marked.body,
      metadata: { ...marked.body.metadata, finalizers: [] },
    });
    expect(release.status).toBe(200);
    expect(await api.getObject({ apiVersion: 'ferry.dev/v1alpha1', kind: 'IPBlock', name: 'b1' })).toBeNull();
    await w.until(3);
    expect(seen(w.events)).toEqual(['MODIFIED b1', 'MODIFIED b1', 'DELETED b1']);
    expect(w.events[0]?.object.metadata?.deletionTimestamp).toBeDefined();
    expect(w.events[1]?.object.metadata?.finalizers).toEqual([]);
    // Without finalizers an object is gone at once, answered with a Success Status that names it.
    const c = await created(api, BLOCKS, block('b2'));
    const gone = await request(api, 'DELETE', `${BLOCKS}/b2`);
    expect(gone.status).toBe(200);
    expect(gone.body).toMatchObject({
      kind: 'Status',
      status: 'Success',
      details: { name: 'b2', group: 'ferry.dev', kind: 'ipblocks', uid: c.metadata.uid },
    });
    expect((await request(api, 'DELETE', `${BLOCKS}/b2`)).status).toBe(404);
    expect((await request(api, 'DELETE', `${BLOCKS}/b2`, { propagationPolicy: 'Foreground' })).status).toBe(404);
  });

  test('garbage collection: a Node deleted marks its dependents (finalizers hold them) and deletes the rest; a dangling owner is collected', async (t) => {
    const api = await useKubeApi(t);
    await api.put(nodeObject('node-a', ['192.0.2.11'], []));
    await api.put(nodeObject('node-b', ['192.0.2.12'], []));
    const nodes = await request(api, 'GET', '/api/v1/nodes');
    const uidOf = (n: string) => nodes.body.items?.find((i) => i.metadata.name === n)?.metadata.uid ?? '';
    const owned = (name: string, node: string, finalizers: string[]) => {
      const b = block(name, node);
      return {
        ...b,
        metadata: {
          ...b.metadata,
          finalizers,
          ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: node, uid: uidOf(node) }],
        },
      };
    };
    await created(api, BLOCKS, owned('held', 'node-a', [FINALIZER]));
    await created(api, BLOCKS, owned('bare', 'node-a', []));
    await created(api, BLOCKS, owned('other', 'node-b', [FINALIZER]));
    const w = await openWatch(api, BLOCKS, `resourceVersion=${(await api.stats()).resourceVersion}`);
    t.onTestFinished(() => w.close());
    await api.delete('node-a');
    await w.until(2);
    expect(seen(w.events).sort()).toEqual(['DELETED bare', 'MODIFIED held']);
    const held = await api.getObject({ apiVersion: 'ferry.dev/v1alpha1', kind: 'IPBlock', name: 'held' });
    expect(held?.metadata.deletionTimestamp).toBeDefined();
    expect(
      (await api.getObject({ apiVersion: 'ferry.dev/v1alpha1', kind: 'IPBlock', name: 'other' }))?.metadata
        .deletionTimestamp,
    ).toBeUndefined();

    // An owner reference to a Node that does not exist (or by another uid) is dangling: collected.
    await api.gc(true);
    const b = block('dangling', 'node-b');
    await created(api, BLOCKS, {
      ...b,
      metadata: {
        ...b.metadata,
        ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'node-b', uid: 'an-old-uid' }],
      },
    });
    expect(await api.getObject({ apiVersion: 'ferry.dev/v1alpha1', kind: 'IPBlock', name: 'dangling' })).not.toBeNull();
    await api.gc(false);
    expect(await api.getObject({ apiVersion: 'ferry.dev/v1alpha1', kind: 'IPBlock', name: 'dangling' })).toBeNull();
    expect(await api.getObject({ apiVersion: 'ferry.dev/v1alpha1', kind: 'IPBlock', name: 'other' })).not.toBeNull();
  });

  test('watch: ADDED/MODIFIED/DELETED, bookmarks of the kind, and a labelSelector watch sees objects enter and leave', async (t) => {
    const api = await useKubeApi(t);
    const all = await openWatch(api, BLOCKS, 'allowWatchBookmarks=true');
    const mine = await openWatch(api, BLOCKS, `labelSelector=${encodeURIComponent('ferry.dev/node=node-a')}`);
    t.onTestFinished(async () => {
      await all.close();
      await mine.close();
    });
    await api.watching(2, 'ipblocks');
    await created(api, BLOCKS, block('b1', 'node-a'));
    await request(
      api,
      'PATCH',
      `${BLOCKS}/b1`,
      { metadata: { labels: { 'ferry.dev/node': 'node-z' } } },
      'application/merge-patch+json',
    );
    await request(api, 'DELETE', `${BLOCKS}/b1`);
    await api.bookmark();
    await all.until(4);
    await mine.until(2);
    expect(seen(all.events)).toEqual(['ADDED b1', 'MODIFIED b1', 'DELETED b1', `BOOKMARK undefined`]);
    expect(all.events[3]?.object).toMatchObject({ kind: 'IPBlock', apiVersion: 'ferry.dev/v1alpha1' });
    expect(seen(mine.events)).toEqual(['ADDED b1', 'DELETED b1']);
    const stats = await api.briefStats();
    const events = (type: string) => stats.watchEvents.find((e) => e.resource === 'ipblocks' && e.type === type)?.count;
    expect([events('ADDED'), events('MODIFIED'), events('DELETED'), events('BOOKMARK')]).toEqual([2, 1, 2, 1]);
  });
});

describe('leases (coordination.k8s.io/v1)', () => {
  const lease = (holder: string, rv?: string) => ({
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: 'ferry-ipam-reclaimer', namespace: 'ferry-system', ...(rv ? { resourceVersion: rv } : {}) },
    spec: { holderIdentity: holder, leaseDurationSeconds: 15, renewTime: '2026-12-01T10:00:00.000000Z' },
  });

  test('create, 409 AlreadyExists, update under resourceVersion (409 stale, 422 without), PUT creates a missing lease', async (t) => {
    const api = await useKubeApi(t, UNAUTHORIZED);
    const l = await created(api, LEASES, lease('a'));
    expect(l.metadata.namespace).toBe('ferry-system');
    expect(l.metadata.generation).toBeUndefined();
    expect((await request(api, 'POST', LEASES, lease('b'))).body.reason).toBe('AlreadyExists');
    const taken = await request(api, 'PUT', `${LEASES}/ferry-ipam-reclaimer`, lease('b', l.metadata.resourceVersion));
    expect(taken.status).toBe(200);
    expect(taken.body.spec).toMatchObject({ holderIdentity: 'b' });
    const lost = await request(api, 'PUT', `${LEASES}/ferry-ipam-reclaimer`, lease('c', l.metadata.resourceVersion));
    expect(lost.status).toBe(409);
    expect(lost.body.message).toContain('leases.coordination.k8s.io "ferry-ipam-reclaimer"');
    expect((await request(api, 'PUT', `${LEASES}/ferry-ipam-reclaimer`, lease('c'))).status).toBe(422);
    const badDuration = await request(api, 'PUT', `${LEASES}/ferry-ipam-reclaimer`, {
      ...lease('b', taken.body.metadata.resourceVersion),
      spec: { leaseDurationSeconds: 0 },
    });
    expect(badDuration.status).toBe(422);
    const other = { ...lease('x'), metadata: { name: 'other', namespace: 'ferry-system' } };
    expect((await request(api, 'PUT', `${LEASES}/other`, other)).status).toBe(201);
    expect((await request(api, 'GET', '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/other')).status).toBe(
      404,
    );
    const wrongNs = await request(api, 'POST', LEASES, {
      ...lease('x'),
      metadata: { name: 'y', namespace: 'default' },
    });
    expect(wrongNs.status).toBe(400);
  });
});

test('RBAC as Ferry: the Lease Role holds in ferry-system only, a status is written by the verb granted for it, and a list names an object only through metadata.name', async (t) => {
  const api = await useKubeApi(t);
  const lease = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'ferry-ipam-reclaimer' } };
  expect((await request(api, 'POST', LEASES, lease)).status).toBe(201);
  expect((await request(api, 'GET', `${LEASES}/ferry-ipam-reclaimer`)).status).toBe(200);
  // A Role bound by a RoleBinding: only in the binding's namespace, never across all of them.
  const elsewhere = await request(api, 'GET', '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x');
  expect([elsewhere.status, elsewhere.body.reason]).toEqual([403, 'Forbidden']);
  expect(elsewhere.body.message).toBe(
    'leases "x" is forbidden: User "system:serviceaccount:ferry-system:ferry" cannot get resource "leases" in ' +
      'API group "coordination.k8s.io" in the namespace "kube-system"',
  );
  expect((await request(api, 'GET', '/apis/coordination.k8s.io/v1/leases')).status).toBe(403);
  // ipranges/status: update granted, patch not; the main resource's rules do not cover the subresource.
  const r = await created(api, RANGES, range());
  const status = { ...r, status: { blocksTotal: 1024, blocksHeld: 0, blocksFree: 1024 } };
  expect((await request(api, 'PUT', `${RANGES}/ferry.v4/status`, status)).status).toBe(200);
  const patched = await request(api, 'PATCH', `${RANGES}/ferry.v4/status`, status, 'application/merge-patch+json');
  expect(patched.status).toBe(403);
  expect(patched.body.message).toContain(
    'cannot patch resource "ipranges" with subresource "status" in API group "ferry.dev"',
  );
  // A get of one IPRange is granted, a list of them is not, with a metadata.name selector or without.
  expect((await request(api, 'GET', `${RANGES}?fieldSelector=metadata.name%3Dferry.v4`)).body.message).toBe(
    'ipranges "ferry.v4" is forbidden: User "system:serviceaccount:ferry-system:ferry" cannot list resource ' +
      '"ipranges" in API group "ferry.dev" at the cluster scope',
  );
  expect((await api.stats()).forbidden).toEqual([
    { verb: 'get', resource: 'leases', group: 'coordination.k8s.io', namespace: 'kube-system' },
    { verb: 'list', resource: 'leases', group: 'coordination.k8s.io' },
    { verb: 'patch', resource: 'ipranges/status', group: 'ferry.dev' },
    { verb: 'list', resource: 'ipranges', group: 'ferry.dev' },
  ]);
});

test('driver: requests are counted as RBAC names them; failNext by resource; held creates answer on release', async (t) => {
  const api = await useKubeApi(t);
  await api.failNext('create', 503, 1, 'ipblocks');
  expect((await request(api, 'POST', RANGES, range())).status).toBe(201);
  expect((await request(api, 'POST', BLOCKS, block('b1'))).status).toBe(503);
  expect((await request(api, 'POST', BLOCKS, block('b1'))).status).toBe(201);
  await request(api, 'PATCH', `${BLOCKS}/b1/status`, { status: { assigned: 1 } }, 'application/merge-patch+json');
  await api.hold('create');
  const pending = request(api, 'POST', BLOCKS, block('b2'));
  await api.held('create');
  expect(await api.getObject({ apiVersion: 'ferry.dev/v1alpha1', kind: 'IPBlock', name: 'b2' })).toBeNull();
  await api.release('create');
  expect((await pending).status).toBe(201);
  const stats = await api.stats();
  expect(stats.requests).toContainEqual({ verb: 'patch', resource: 'ipblocks/status', group: 'ferry.dev' });
  expect(stats.requestCounts).toContainEqual({ verb: 'create', group: 'ferry.dev', resource: 'ipblocks', count: 3 });
  expect(stats.requestCounts).toContainEqual({ verb: 'create', group: 'ferry.dev', resource: 'ipranges', count: 1 });
  const b = await api.putObject({ ...block('b3'), metadata: { ...block('b3').metadata, finalizers: [FINALIZER] } });
  await api.putObject({ ...b, status: { assigned: 2 } }, { subresource: 'status' });
  expect((await api.getObject({ apiVersion: 'ferry.dev/v1alpha1', kind: 'IPBlock', name: 'b3' }))?.status).toEqual({
    assigned: 2,
  });
  await expect(api.putObject({ ...b, spec: { ...block('b3').spec, node: 'node-q' } })).rejects.toThrow(
    /422 Invalid: .*spec is immutable/,
  );
  await api.deleteObject({ apiVersion: 'ferry.dev/v1alpha1', kind: 'IPBlock', name: 'b3' });
  expect(
    (await api.getObject({ apiVersion: 'ferry.dev/v1alpha1', kind: 'IPBlock', name: 'b3' }))?.metadata
      .deletionTimestamp,
  ).toBeDefined();
});
