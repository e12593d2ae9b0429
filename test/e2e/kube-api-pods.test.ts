/**
 * The stand-in API server (test/fixtures/kube-api-server.mjs) serves Pods as kube-apiserver does, over
 * plain HTTP from this process: what "Kubernetes API Concepts" says of lists, watches, resource
 * versions, bookmarks and field selectors, and what PATCH does with merge and JSON patches, conflicts
 * and failed tests. Ferry's pod cache and status writer are tested against it elsewhere; these tests are
 * what makes those mean something.
 */
import { describe, expect, test } from 'vitest';
import { type KubeApi, podObject, useKubeApi } from '../fixtures/kube-api';
import { openWatch as openAt, seen } from '../fixtures/kube-wire';

const openWatch = (api: KubeApi, query: string) => openAt(api, '/api/v1/pods', query);

async function getJson(url: string) {
  const res = await fetch(url);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> & { items?: KubeObject[] } };
}

interface KubeObject {
  metadata: { name: string; resourceVersion: string; annotations?: Record<string, string> };
}

/** The PATCH tests are of the API's rules, not of who may: no RBAC (ferry's account may not patch pods). */
const UNAUTHORIZED = { serviceAccount: false } as const;

async function patchPod(api: KubeApi, ns: string, name: string, contentType: string, body: unknown, sub = '') {
  const res = await fetch(`${api.url}/api/v1/namespaces/${ns}/pods/${name}${sub}`, {
    method: 'PATCH',
    headers: { 'content-type': contentType },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> & KubeObject };
}

describe('pods: list and watch', () => {
  test('list across namespaces with fieldSelector spec.nodeName; an unsupported field is 400', async (t) => {
    const api = await useKubeApi(t);
    await api.putPod(podObject('a', 'web-1', 'node-a'));
    await api.putPod(podObject('b', 'web-2', 'node-a'));
    await api.putPod(podObject('a', 'db-1', 'node-b'));
    await api.putPod(podObject('a', 'pending-1', undefined));
    const mine = await getJson(`${api.url}/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a`);
    expect(mine.status).toBe(200);
    expect(mine.body).toMatchObject({ kind: 'PodList', apiVersion: 'v1' });
    expect(mine.body.items?.map((p) => p.metadata.name).sort()).toEqual(['web-1', 'web-2']);
    expect((mine.body.metadata as { resourceVersion: string }).resourceVersion).toBe(
      (await api.stats()).resourceVersion,
    );
    // == and != and a namespace-scoped path; the unscheduled pod has spec.nodeName "".
    const notA = await getJson(`${api.url}/api/v1/namespaces/a/pods?fieldSelector=spec.nodeName!%3Dnode-a`);
    expect(notA.body.items?.map((p) => p.metadata.name).sort()).toEqual(['db-1', 'pending-1']);
    const unbound = await getJson(`${api.url}/api/v1/pods?fieldSelector=spec.nodeName%3D%3D`);
    expect(unbound.body.items?.map((p) => p.metadata.name)).toEqual(['pending-1']);
    const bad = await getJson(`${api.url}/api/v1/pods?fieldSelector=spec.hostname%3Dx`);
    expect(bad).toMatchObject({ status: 400, body: { kind: 'Status', code: 400, reason: 'BadRequest' } });
    expect(bad.body.message).toBe('field label not supported: spec.hostname');
  });

  test('a watch with a field selector: pods bound to the node arrive as ADDED, changes as MODIFIED, deletion as DELETED; others never', async (t) => {
    const api = await useKubeApi(t);
    await api.putPod(podObject('a', 'web-1', 'node-a'));
    await api.putPod(podObject('a', 'db-1', 'node-b'));
    const w = await openWatch(api, 'fieldSelector=spec.nodeName%3Dnode-a&allowWatchBookmarks=true');
    t.onTestFinished(() => w.close());
    expect(w.status).toBe(200);
    // No resourceVersion: "get state and start at most recent", synthetic ADDED for what matches.
    await w.until(1);
    await api.putPod(podObject('a', 'late-1', undefined));
    await api.putPod(podObject('a', 'late-1', 'node-a')); // the scheduler binds it: it starts matching
    await api.putPod(podObject('a', 'db-1', 'node-b', { x: 'y' })); // another node's pod
    await api.putPod(podObject('a', 'web-1', 'node-a', { x: 'y' }));
    await api.deletePod('a', 'web-1');
    const rv = await api.bookmark();
    await w.until(5);
    expect(seen(w.events)).toEqual([
      'ADDED web-1',
      'ADDED late-1',
      'MODIFIED web-1',
      'DELETED web-1',
      'BOOKMARK undefined',
    ]);
    expect(w.events[4]?.object).toEqual({ kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: rv } });
    // Each event carries the object's resourceVersion after the change.
    const stored = await api.getPod('a', 'late-1');
    expect(w.events[1]?.object.metadata?.resourceVersion).toBe(stored?.metadata.resourceVersion);
  });

  test('a watch from a resourceVersion replays what came after it; one from a compacted resourceVersion is 410 (ERROR event or HTTP)', async (t) => {
    const api = await useKubeApi(t);
    await api.putPod(podObject('a', 'web-1', 'node-a'));
    const { resourceVersion: from } = await api.putPod(podObject('a', 'web-2', 'node-a'));
    await api.putPod(podObject('a', 'web-3', 'node-a'));
    const replay = await openWatch(api, `fieldSelector=spec.nodeName%3Dnode-a&resourceVersion=${from}`);
    t.onTestFinished(() => replay.close());
    await replay.until(1);
    expect(seen(replay.events)).toEqual(['ADDED web-3']);
    await api.compact('event');
    const gone = await openWatch(api, `resourceVersion=${from}`);
    await gone.untilEnded();
    expect(gone.status).toBe(200);
    expect(gone.events).toEqual([
      { type: 'ERROR', object: expect.objectContaining({ kind: 'Status', code: 410, reason: 'Expired' }) },
    ]);
    await api.compact('http');
    const goneHttp = await fetch(`${api.url}/api/v1/pods?watch=1&resourceVersion=${from}`);
    expect(goneHttp.status).toBe(410);
    expect(await goneHttp.json()).toMatchObject({ kind: 'Status', code: 410, reason: 'Expired' });
    // expire: the open watch itself ends with the ERROR event.
    const open = await openWatch(api, `resourceVersion=${(await api.stats()).resourceVersion}`);
    await api.watching(2, 'pods');
    await api.expire();
    await open.untilEnded();
    expect(seen(open.events)).toEqual(['ERROR Expired']);
  });

  test('list resourceVersion semantics: Exact at an old version shows that state, at a compacted one is HTTP 410; a future one is 504', async (t) => {
    const api = await useKubeApi(t);
    const { resourceVersion: rv1 } = await api.putPod(podObject('a', 'web-1', 'node-a'));
    await api.putPod(podObject('a', 'web-2', 'node-a'));
    await api.deletePod('a', 'web-1');
    const exact = await getJson(`${api.url}/api/v1/pods?resourceVersion=${rv1}&resourceVersionMatch=Exact`);
    expect(exact.body.items?.map((p) => p.metadata.name)).toEqual(['web-1']);
    expect((exact.body.metadata as { resourceVersion: string }).resourceVersion).toBe(rv1);
    // NotOlderThan (the default for a non-zero resourceVersion) is served from the newest state.
    const newer = await getJson(`${api.url}/api/v1/pods?resourceVersion=${rv1}`);
    expect(newer.body.items?.map((p) => p.metadata.name)).toEqual(['web-2']);
    await api.compact();
    const gone = await getJson(`${api.url}/api/v1/pods?resourceVersion=${rv1}&resourceVersionMatch=Exact`);
    expect(gone).toMatchObject({ status: 410, body: { kind: 'Status', code: 410, reason: 'Expired' } });
    const future = await getJson(`${api.url}/api/v1/pods?resourceVersion=99999`);
    expect(future).toMatchObject({ status: 504, body: { reason: 'Timeout' } });
    const noRv = await getJson(`${api.url}/api/v1/pods?resourceVersionMatch=Exact`);
    expect(noRv.status).toBe(400);
  });
});

describe('pods: GET and PATCH', () => {
  test('GET one pod, or 404 with a NotFound Status', async (t) => {
    const api = await useKubeApi(t, UNAUTHORIZED);
    const { uid } = await api.putPod(podObject('a', 'web-1', 'node-a'));
    const pod = await getJson(`${api.url}/api/v1/namespaces/a/pods/web-1`);
    expect(pod).toMatchObject({ status: 200, body: { kind: 'Pod', metadata: { name: 'web-1', namespace: 'a', uid } } });
    const missing = await getJson(`${api.url}/api/v1/namespaces/b/pods/web-1`);
    expect(missing).toMatchObject({
      status: 404,
      body: {
        kind: 'Status',
        reason: 'NotFound',
        message: 'pods "web-1" not found',
        details: { name: 'web-1', kind: 'pods' },
      },
    });
    expect((await api.stats()).gets).toBe(2);
  });

  test('merge patch of annotations: null removes, a MODIFIED event follows; a stale resourceVersion is 409', async (t) => {
    const api = await useKubeApi(t, UNAUTHORIZED);
    await api.putPod(podObject('a', 'web-1', 'node-a', { keep: 'me', drop: 'me' }));
    const w = await openWatch(api, 'fieldSelector=metadata.name%3Dweb-1');
    t.onTestFinished(() => w.close());
    await w.until(1);
    const before = await api.getPod('a', 'web-1');
    const ok = await patchPod(api, 'a', 'web-1', 'application/merge-patch+json', {
      metadata: { resourceVersion: before?.metadata.resourceVersion, annotations: { drop: null, add: 'it' } },
    });
    expect(ok.status).toBe(200);
    expect(ok.body.metadata.annotations).toEqual({ keep: 'me', add: 'it' });
    expect(Number(ok.body.metadata.resourceVersion)).toBeGreaterThan(Number(before?.metadata.resourceVersion));
    await w.until(2);
    expect(seen(w.events)).toEqual(['ADDED web-1', 'MODIFIED web-1']);
    // The same patch again carries a resourceVersion that is no longer current.
    const stale = await patchPod(api, 'a', 'web-1', 'application/merge-patch+json', {
      metadata: { resourceVersion: before?.metadata.resourceVersion, annotations: { add: 'again' } },
    });
    expect(stale).toMatchObject({ status: 409, body: { kind: 'Status', reason: 'Conflict', code: 409 } });
    expect(stale.body.message).toMatch(/^Operation cannot be fulfilled on pods "web-1": the object has been modified/);
    // A patch that changes nothing writes nothing: same resourceVersion, no event.
    const same = await patchPod(api, 'a', 'web-1', 'application/merge-patch+json', {
      metadata: { annotations: { add: 'it' } },
    });
    expect(same.body.metadata.resourceVersion).toBe(ok.body.metadata.resourceVersion);
    expect((await api.stats()).patches.map((p) => p.code)).toEqual([200, 409, 200]);
  });

  test('JSON patch: a test that holds applies, one that fails is 422 and changes nothing', async (t) => {
    const api = await useKubeApi(t, UNAUTHORIZED);
    await api.putPod(podObject('a', 'web-1', 'node-a', { 'k8s.v1.cni.cncf.io/network-status': '[]' }));
    const path = '/metadata/annotations/k8s.v1.cni.cncf.io~1network-status';
    const ok = await patchPod(api, 'a', 'web-1', 'application/json-patch+json', [
      { op: 'test', path, value: '[]' },
      { op: 'replace', path, value: '[{"name":"ferry"}]' },
    ]);
    expect(ok.status).toBe(200);
    expect(ok.body.metadata.annotations?.['k8s.v1.cni.cncf.io/network-status']).toBe('[{"name":"ferry"}]');
    const failed = await patchPod(api, 'a', 'web-1', 'application/json-patch+json', [
      { op: 'test', path, value: '[]' },
      { op: 'replace', path, value: 'clobbered' },
    ]);
    expect(failed).toMatchObject({ status: 422, body: { kind: 'Status', code: 422, reason: 'Invalid' } });
    expect(JSON.stringify(failed.body.details)).toContain('test failed');
    expect((await api.getPod('a', 'web-1'))?.metadata.annotations?.['k8s.v1.cni.cncf.io/network-status']).toBe(
      '[{"name":"ferry"}]',
    );
  });

  test('what the API server refuses: other patch types 415, bad annotations 422, spec changes 422 here, missing pods 404', async (t) => {
    const api = await useKubeApi(t, UNAUTHORIZED);
    await api.putPod(podObject('a', 'web-1', 'node-a'));
    const smp = await patchPod(api, 'a', 'web-1', 'application/strategic-merge-patch+json', { metadata: {} });
    expect(smp).toMatchObject({ status: 415, body: { reason: 'UnsupportedMediaType' } });
    const notString = await patchPod(api, 'a', 'web-1', 'application/merge-patch+json', {
      metadata: { annotations: { n: 1 } },
    });
    expect(notString.status).toBe(422);
    const badKey = await patchPod(api, 'a', 'web-1', 'application/merge-patch+json', {
      metadata: { annotations: { 'not a key': 'x' } },
    });
    expect(badKey.status).toBe(422);
    const huge = await patchPod(api, 'a', 'web-1', 'application/merge-patch+json', {
      metadata: { annotations: { big: 'x'.repeat(256 * 1024) } },
    });
    expect(huge).toMatchObject({ status: 422, body: { reason: 'Invalid' } });
    expect(huge.body.message).toContain('Too long: must have at most 262144 bytes');
    const spec = await patchPod(api, 'a', 'web-1', 'application/merge-patch+json', { spec: { nodeName: 'node-b' } });
    expect(spec.status).toBe(422);
    const missing = await patchPod(api, 'a', 'nope', 'application/merge-patch+json', { metadata: {} });
    expect(missing.status).toBe(404);
    expect((await api.getPod('a', 'web-1'))?.metadata.annotations).toEqual({});
  });

  test('driver: raceNextPatch makes a patch with the old resourceVersion conflict; failNext fails requests as told', async (t) => {
    const api = await useKubeApi(t, UNAUTHORIZED);
    const { resourceVersion } = await api.putPod(podObject('a', 'web-1', 'node-a'));
    await api.raceNextPatch('a', 'web-1', { 'other.example/status': 'theirs' });
    const raced = await patchPod(api, 'a', 'web-1', 'application/merge-patch+json', {
      metadata: { resourceVersion, annotations: { mine: 'x' } },
    });
    expect(raced.status).toBe(409);
    expect((await api.getPod('a', 'web-1'))?.metadata.annotations).toEqual({ 'other.example/status': 'theirs' });
    await api.failNext('get', 503, 2);
    expect((await getJson(`${api.url}/api/v1/namespaces/a/pods/web-1`)).status).toBe(503);
    expect((await getJson(`${api.url}/api/v1/namespaces/a/pods/web-1`)).status).toBe(503);
    expect((await getJson(`${api.url}/api/v1/namespaces/a/pods/web-1`)).status).toBe(200);
  });

  test('pods/status: a patch changes annotations, labels and status, never the spec; RBAC lets Ferry patch pods/status and refuses pods (403)', async (t) => {
    const api = await useKubeApi(t);
    await api.putPod(podObject('a', 'web-1', 'node-a'));
    const patched = await patchPod(
      api,
      'a',
      'web-1',
      'application/merge-patch+json',
      {
        metadata: { annotations: { 'k8s.v1.cni.cncf.io/network-status': '[]' }, labels: { extra: 'y' } },
        spec: { nodeName: 'node-b', containers: [{ name: 'evil', image: 'evil.example/x' }] },
        status: { message: 'set through status' },
      },
      '/status',
    );
    expect(patched.status).toBe(200);
    const stored = await api.getPod('a', 'web-1');
    expect(stored?.metadata.annotations).toEqual({ 'k8s.v1.cni.cncf.io/network-status': '[]' });
    expect(stored?.metadata.labels).toMatchObject({ extra: 'y' });
    expect(stored?.status).toMatchObject({ message: 'set through status', phase: 'Running' });
    // The spec is the one stored, whatever the patch said of it.
    expect(stored?.spec).toEqual(podObject('a', 'web-1', 'node-a').spec);
    // The metadata's other fields stay immutable there too.
    const renamed = await patchPod(
      api,
      'a',
      'web-1',
      'application/merge-patch+json',
      { metadata: { uid: 'x' } },
      '/status',
    );
    expect(renamed.status).toBe(422);
    // deploy/rbac.yaml, as RBAC reads it: Ferry's account may patch the status, not the pod.
    const refused = await patchPod(api, 'a', 'web-1', 'application/merge-patch+json', {
      metadata: { labels: { a: 'b' } },
    });
    expect(refused).toMatchObject({ status: 403, body: { kind: 'Status', reason: 'Forbidden', code: 403 } });
    expect(refused.body.message).toBe(
      'pods "web-1" is forbidden: User "system:serviceaccount:ferry-system:ferry" cannot patch resource "pods" in API group "" in the namespace "a"',
    );
    const { requests, forbidden } = await api.stats();
    expect(requests).toEqual([
      { verb: 'patch', resource: 'pods/status' },
      { verb: 'patch', resource: 'pods/status' },
      { verb: 'patch', resource: 'pods' },
    ]);
    expect(forbidden).toEqual([{ verb: 'patch', resource: 'pods', namespace: 'a' }]);
  });
});
