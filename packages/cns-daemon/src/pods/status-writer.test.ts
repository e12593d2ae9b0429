import type { InterfaceRecord } from '@ferry/shared-types/api/endpoints';
import { NETWORK_STATUS_ANNOTATION } from '@ferry/shared-types/kube/network-status';
import pino from 'pino';
import { describe, expect, type TestContext, test } from 'vitest';
import { apiError, FakePodApi } from '../testing/fake-pod-api';
import { interfaceRecord } from '../testing/interface-record';
import type { PodView } from './pod';
import { PodCache } from './pod-cache';
import { NetworkStatusWriter } from './status-writer';

const log = pino({ level: 'silent' });
const multus = { name: 'kube-system/macvlan', interface: 'net5', ips: ['192.168.1.5'], mac: '86:1d:96:ff:55:0d' };

const infra = interfaceRecord({ containerId: 'c1', ifName: 'eth0' });

/** A writer over a fake API, its cache fed from the fake (as the watch would), and records the test sets. */
function setUp(
  t: TestContext,
  opts: { backoff?: { initialMs: number; maxMs: number }; resyncMs?: number; now?: () => number } = {},
) {
  const api = new FakePodApi();
  const cache = new PodCache({ api, lookupTimeoutMs: 500, log });
  let records: InterfaceRecord[] = [];
  const writer = new NetworkStatusWriter({
    cache,
    api,
    records: (pod) => records.filter((r) => !pod || (r.pod.namespace === pod.namespace && r.pod.name === pod.name)),
    log,
    resyncMs: opts.resyncMs ?? 60_000,
    backoff: opts.backoff ?? { initialMs: 10, maxMs: 40 },
    ...(opts.now ? { now: opts.now } : {}),
  });
  t.onTestFinished(() => writer.stop());
  const deliver = () => {
    for (const p of api.pods.values()) cache.upsert(objectOf(p));
  };
  const objectOf = (p: PodView) => ({
    metadata: {
      namespace: p.namespace,
      name: p.name,
      uid: p.uid,
      resourceVersion: p.resourceVersion,
      annotations: p.annotations,
    },
  });
  return {
    api,
    cache,
    writer,
    setRecords(r: InterfaceRecord[]) {
      records = r;
    },
    /** What the watch would deliver: every pod of the fake as it is now. */
    deliver,
    /** Pod a/web-1 (with these annotations) in the API and the cache, and its InfraNIC in the records. */
    web1(annotations: Record<string, string> = {}): PodView {
      const pod = api.put({ namespace: 'a', name: 'web-1', uid: 'u1', annotations });
      deliver();
      records = [infra];
      return pod;
    },
    status: (name = 'web-1') => {
      const text = api.pods.get(`a/${name}`)?.annotations[NETWORK_STATUS_ANNOTATION];
      return text === undefined ? undefined : (JSON.parse(text) as { name: string; interface: string }[]);
    },
  };
}

describe('NetworkStatusWriter', () => {
  test("report: one merge patch carrying the pod's resourceVersion; another writer's entry survives", async (t) => {
    const s = setUp(t);
    const pod = s.web1({ [NETWORK_STATUS_ANNOTATION]: JSON.stringify([multus]) });
    s.writer.start();
    s.writer.report({ namespace: 'a', name: 'web-1' });
    await s.writer.idle();
    expect(s.api.patches()).toHaveLength(1);
    expect(s.api.patches()[0]?.resourceVersion).toBe(pod.resourceVersion);
    expect(s.status()?.map((e) => e.name)).toEqual(['ferry', 'kube-system/macvlan']);
    expect(s.status()?.[1]).toEqual(multus);
    expect(s.writer.counts).toMatchObject({ written: 1, conflicts: 0, failed: 0 });
  });

  test('reports coalesce: ten reports of one pod are one write', async (t) => {
    const s = setUp(t);
    s.web1();
    s.writer.start();
    for (let i = 0; i < 10; i++) s.writer.report({ namespace: 'a', name: 'web-1' });
    await s.writer.idle();
    expect(s.api.patches()).toHaveLength(1);
  });

  test('a conflict (the pod changed since it was read) reads the pod again and writes over the new version', async (t) => {
    const s = setUp(t);
    s.web1();
    // Just before our patch lands, another writer adds its entry.
    s.api.races.set('a/web-1', { [NETWORK_STATUS_ANNOTATION]: JSON.stringify([multus]) });
    s.writer.start();
    s.writer.report({ namespace: 'a', name: 'web-1' });
    await s.writer.idle();
    expect(s.api.calls.map((c) => c.verb)).toEqual(['patch', 'get', 'patch']);
    expect(s.status()?.map((e) => e.name)).toEqual(['ferry', 'kube-system/macvlan']);
    expect(s.writer.counts).toMatchObject({ written: 1, conflicts: 1, failed: 0 });
  });

  test('failures are retried with a growing back-off until the API server answers', async (t) => {
    const s = setUp(t, { backoff: { initialMs: 20, maxMs: 80 } });
    s.web1();
    s.api.failures.push(new Error('connect ECONNREFUSED'), apiError(500), apiError(429));
    s.writer.start();
    s.writer.report({ namespace: 'a', name: 'web-1' });
    expect(s.writer.pending().pods).toBe(1);
    await s.writer.idle();
    expect(s.writer.counts).toMatchObject({ written: 1, failed: 3 });
    expect(s.status()?.map((e) => e.interface)).toEqual(['eth0']);
    expect(s.writer.pending()).toEqual({ pods: 0, oldestSec: 0 });
  });

  test('pending: an empty queue is 0 s old however the clock moves between readings', (t) => {
    let ms = 1_000;
    // A clock that ticks on every reading, as Date.now() may between two statements.
    const s = setUp(t, { now: () => ms++ });
    expect(s.writer.pending()).toEqual({ pods: 0, oldestSec: 0 });
    expect(s.writer.pending()).toEqual({ pods: 0, oldestSec: 0 });
  });

  test('the pod watch listing again (the API server back) retries at once what waits out its back-off', async (t) => {
    const s = setUp(t, { backoff: { initialMs: 60_000, maxMs: 60_000 } });
    s.web1();
    s.api.failures.push(new Error('connect ECONNREFUSED'));
    s.writer.start();
    s.writer.report({ namespace: 'a', name: 'web-1' });
    await new Promise((r) => setTimeout(r, 20));
    expect(s.writer.counts.failed).toBe(1);
    s.cache.markSynced();
    await s.writer.idle();
    expect(s.writer.counts.written).toBe(1);
  });

  test("resync: records that changed without a report are written; the attachment gone takes Ferry's entries out", async (t) => {
    const s = setUp(t, { resyncMs: 20 });
    s.api.put({ namespace: 'a', name: 'web-1', uid: 'u1' });
    s.api.put({
      namespace: 'a',
      name: 'web-2',
      uid: 'u2',
      annotations: { [NETWORK_STATUS_ANNOTATION]: JSON.stringify([multus]) },
    });
    s.deliver();
    s.cache.markSynced();
    s.writer.start();
    s.setRecords([
      infra,
      interfaceRecord({ containerId: 'c2', ifName: 'eth0', pod: { namespace: 'a', name: 'web-2', uid: 'u2' } }),
    ]);
    while (s.writer.counts.written < 2) await new Promise((r) => setTimeout(r, 10));
    s.deliver();
    expect(s.status('web-1')?.map((e) => e.name)).toEqual(['ferry']);
    expect(s.status('web-2')?.map((e) => e.name)).toEqual(['ferry', 'kube-system/macvlan']);
    // DEL of both: web-1's annotation goes (only Ferry's entries were in it), web-2 keeps Multus'.
    s.setRecords([]);
    while (s.writer.counts.written < 4) await new Promise((r) => setTimeout(r, 10));
    expect(s.api.pods.get('a/web-1')?.annotations).toEqual({});
    expect(s.status('web-2')).toEqual([multus]);
  });

  test("a pod delivered without Ferry's entries (another writer replaced the list) gets them back; one in line is left alone", async (t) => {
    const s = setUp(t);
    s.web1();
    s.writer.start();
    s.writer.report({ namespace: 'a', name: 'web-1' });
    await s.writer.idle();
    s.deliver();
    expect(s.api.patches()).toHaveLength(1);
    const pod = s.api.pods.get('a/web-1');
    if (!pod) throw new Error('no pod');
    s.api.put({ ...pod, annotations: { [NETWORK_STATUS_ANNOTATION]: JSON.stringify([multus]) } });
    s.deliver();
    await s.writer.idle();
    expect(s.api.patches()).toHaveLength(2);
    expect(s.status()?.map((e) => e.name)).toEqual(['ferry', 'kube-system/macvlan']);
  });

  test('a pod deleted before its write is counted gone, not retried', async (t) => {
    const s = setUp(t);
    s.setRecords([infra]);
    s.writer.start();
    s.writer.report({ namespace: 'a', name: 'web-1' });
    await s.writer.idle();
    expect(s.writer.counts).toMatchObject({ gone: 1, written: 0, failed: 0 });
    expect(s.api.calls).toEqual([{ verb: 'get', pod: 'a/web-1' }]);
  });
});
