import { CniError, Code } from '@ferry/shared-types/errors';
import pino from 'pino';
import { describe, expect, test } from 'vitest';
import { apiError, FakePodApi } from '../testing/fake-pod-api';
import { isPodWithUid, podViewOf } from './pod';
import { PodCache } from './pod-cache';

const log = pino({ level: 'silent' });

/** A Pod object as a watch event carries it. */
function podObject(namespace: string, name: string, uid: string, annotations?: Record<string, string>) {
  return {
    kind: 'Pod',
    metadata: { namespace, name, uid, resourceVersion: '7', ...(annotations ? { annotations } : {}) },
    spec: { nodeName: 'node-a', containers: [] },
    status: { phase: 'Running' },
  };
}

function cacheWith(api: FakePodApi, lookupTimeoutMs = 1000) {
  return new PodCache({ api, lookupTimeoutMs, log });
}

describe('Pod objects', () => {
  test('the fields ferryd reads; a malformed one says which field', () => {
    expect(podViewOf(podObject('a', 'web-1', 'u1', { k: 'v' }))).toEqual({
      pod: {
        namespace: 'a',
        name: 'web-1',
        uid: 'u1',
        resourceVersion: '7',
        annotations: { k: 'v' },
        nodeName: 'node-a',
      },
    });
    expect(podViewOf({ metadata: { namespace: 'a', name: 'x', resourceVersion: '1' } })).toEqual({
      problem: 'metadata.uid: expected string',
    });
    expect(podViewOf(podObject('a', 'x', 'u', { n: 1 as unknown as string }))).toEqual({
      problem: 'metadata.annotations.n: expected string',
    });
  });

  test("the pod a UID means: its own, or (a static pod's mirror) the one the kubelet wrote on it", () => {
    const r = podViewOf(
      podObject('kube-system', 'etcd-node-a', 'mirror-uid', { 'kubernetes.io/config.mirror': 'hash' }),
    );
    if (!('pod' in r)) throw new Error(r.problem);
    expect([undefined, '', 'mirror-uid', 'hash'].map((uid) => isPodWithUid(r.pod, uid))).toEqual([
      true,
      true,
      true,
      true,
    ]);
    expect(isPodWithUid(r.pod, 'other')).toBe(false);
  });
});

describe('PodCache', () => {
  test('follows upserts and removals; a malformed object is skipped', () => {
    const cache = cacheWith(new FakePodApi());
    const changed: string[] = [];
    cache.onChange((p) => changed.push(`${p.name}@${p.resourceVersion}`));
    cache.upsert(podObject('a', 'web-1', 'u1'));
    cache.upsert({
      ...podObject('a', 'web-1', 'u1'),
      metadata: { namespace: 'a', name: 'web-1', uid: 'u1', resourceVersion: '8' },
    });
    cache.upsert({ metadata: { name: 'broken' } });
    expect(cache.pods().map((p) => p.resourceVersion)).toEqual(['8']);
    expect(changed).toEqual(['web-1@7', 'web-1@8']);
    cache.remove(podObject('a', 'web-1', 'u1'));
    expect(cache.get('a', 'web-1')).toBeUndefined();
    expect(cache.hasSynced).toBe(false);
    cache.markSynced();
    expect(cache.hasSynced).toBe(true);
  });

  test('lookup: from the cache without asking the API server; a pod of another UID is asked for', async () => {
    const api = new FakePodApi();
    const cache = cacheWith(api);
    cache.upsert(podObject('a', 'web-1', 'old-uid'));
    expect((await cache.lookup({ namespace: 'a', name: 'web-1' }))?.uid).toBe('old-uid');
    expect((await cache.lookup({ namespace: 'a', name: 'web-1', uid: 'old-uid' }))?.uid).toBe('old-uid');
    expect(api.calls).toEqual([]);
    // The StatefulSet's pod was made again: the cache still has the old one.
    api.put({ namespace: 'a', name: 'web-1', uid: 'new-uid' });
    expect((await cache.lookup({ namespace: 'a', name: 'web-1', uid: 'new-uid' }))?.uid).toBe('new-uid');
    expect(api.calls).toEqual([{ verb: 'get', pod: 'a/web-1' }]);
    expect(cache.counts).toEqual({ cache: 2, api: 1, absent: 0, unavailable: 0 });
  });

  test('lookup: a pod the API server does not have (or has with another UID) is absent', async () => {
    const api = new FakePodApi();
    const cache = cacheWith(api);
    expect(await cache.lookup({ namespace: 'a', name: 'gone' })).toBeUndefined();
    api.put({ namespace: 'a', name: 'web-1', uid: 'newer' });
    expect(await cache.lookup({ namespace: 'a', name: 'web-1', uid: 'older' })).toBeUndefined();
    expect(cache.counts.absent).toBe(2);
  });

  test('lookup: the API server away is retried within the deadline; it answering in time is enough', async () => {
    const api = new FakePodApi();
    const cache = cacheWith(api, 2000);
    api.put({ namespace: 'a', name: 'web-1', uid: 'u1' });
    api.failures.push(new Error('connect ECONNREFUSED 127.0.0.1:6443'), apiError(503));
    expect((await cache.lookup({ namespace: 'a', name: 'web-1' }))?.uid).toBe('u1');
    expect(api.calls).toHaveLength(3);
    expect(cache.counts.api).toBe(1);
  });

  test('lookup: no answer within lookupTimeoutMs is code 11, naming the pod and the last error', async () => {
    const api = new FakePodApi();
    const cache = cacheWith(api, 300);
    for (let i = 0; i < 50; i++) api.failures.push(new Error('connect ECONNREFUSED 127.0.0.1:6443'));
    const err = await cache.lookup({ namespace: 'a', name: 'web-1' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CniError);
    expect(err).toMatchObject({ code: Code.TryAgainLater });
    expect((err as Error).message).toBe(
      'look up pod a/web-1: the Kubernetes API did not answer within 300 ms (kubernetes api: connect ECONNREFUSED 127.0.0.1:6443); try again later',
    );
    expect(api.calls.length).toBeGreaterThan(1);
    expect(cache.counts.unavailable).toBe(1);
  });

  test('lookup: 403 is answered at once (it does not heal while an ADD waits)', async () => {
    const api = new FakePodApi();
    const cache = cacheWith(api, 5000);
    api.failures.push(
      apiError(
        403,
        'pods "web-1" is forbidden: User "system:serviceaccount:ferry-system:ferry" cannot get resource "pods"',
      ),
    );
    const err = await cache.lookup({ namespace: 'a', name: 'web-1' }).catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: Code.TryAgainLater,
      message: expect.stringMatching(/^look up pod a\/web-1: kubernetes api: HTTP 403: pods "web-1" is forbidden/),
    });
    expect(api.calls).toHaveLength(1);
  });

  test('lookup: the watch delivering the pod while the API server is away answers it', async () => {
    const api = new FakePodApi();
    const cache = cacheWith(api, 5000);
    for (let i = 0; i < 50; i++) api.failures.push(new Error('connect ECONNREFUSED'));
    const asked = cache.lookup({ namespace: 'a', name: 'web-1', uid: 'u1' });
    setTimeout(() => cache.upsert(podObject('a', 'web-1', 'u1')), 150);
    expect((await asked)?.uid).toBe('u1');
    expect(cache.counts).toMatchObject({ cache: 1, unavailable: 0 });
  });

  test('lookup: two questions about one pod share one GET', async () => {
    const api = new FakePodApi();
    const cache = cacheWith(api);
    api.put({ namespace: 'a', name: 'web-1', uid: 'u1' });
    const [a, b] = await Promise.all([
      cache.lookup({ namespace: 'a', name: 'web-1', uid: 'u1' }),
      cache.lookup({ namespace: 'a', name: 'web-1', uid: 'u1' }),
    ]);
    expect(a).toBe(b);
    expect(api.calls).toHaveLength(1);
  });
});
