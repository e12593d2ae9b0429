/**
 * The Kubernetes peer source (packages/cns-daemon/src/cluster/kube-source.ts) in-process, against the fake
 * API server (test/fixtures/kube-api-server.mjs) as a real process on loopback: the real client library
 * lists and watches over real HTTP, and the server changes, bookmarks, expires and cuts the watch.
 */
import { readFileSync } from 'node:fs';
import pino from 'pino';
import { describe, expect, test } from 'vitest';
import { createKubePeerSource } from '../../packages/cns-daemon/src/cluster/kube-source';
import type { Peer, PeerSource } from '../../packages/cns-daemon/src/cluster/peers';
import { type KubeApi, nodeObject, useKubeApi } from '../fixtures/kube-api';
import { inNetns, useNetns } from '../fixtures/netns';
import type { Scope } from '../fixtures/scope';

const SELF = 'node-a';
/** A generous ceiling for one change to reach the listener; the time it took is printed, not asserted. */
const REPORT_TIMEOUT_MS = 5_000;

interface Watcher {
  source: PeerSource;
  reports: (readonly Peer[])[];
  logs: Record<string, unknown>[];
  /** Resolves with the first report (already received or future) after `since` that satisfies `pred`. */
  until(pred: (peers: readonly Peer[]) => boolean, since?: number): Promise<readonly Peer[]>;
  /** Resolves once `pred(status)` holds. */
  untilStatus(pred: (s: ReturnType<PeerSource['status']>) => boolean): Promise<void>;
}

function watchPeers(t: Scope, api: KubeApi, backoff = { initialMs: 50, maxMs: 400 }): Watcher {
  const reports: (readonly Peer[])[] = [];
  const logs: Record<string, unknown>[] = [];
  const waiters = new Set<() => void>();
  const wake = () => {
    for (const w of [...waiters]) w();
  };
  const log = pino(
    { level: 'debug' },
    {
      write(line: string) {
        logs.push(JSON.parse(line) as Record<string, unknown>);
        wake();
      },
    },
  );
  const source = createKubePeerSource({ kubeconfig: api.kubeconfig, nodeName: SELF, log, backoff });
  t.onTestFinished(() => source.stop());
  source.start((peers) => {
    reports.push(peers);
    wake();
  });
  const wait = (check: () => boolean, what: string) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        done();
        reject(new Error(`timed out waiting for ${what}; reports: ${JSON.stringify(reports.at(-1))}`));
      }, REPORT_TIMEOUT_MS);
      // status() changes without a report or a log line (a bookmark, a watch restart): look again often.
      const poll = setInterval(() => tryIt(), 20);
      const done = () => {
        clearTimeout(timer);
        clearInterval(poll);
        waiters.delete(tryIt);
      };
      const tryIt = () => {
        if (!check()) return;
        done();
        resolve();
      };
      waiters.add(tryIt);
      tryIt();
    });
  return {
    source,
    reports,
    logs,
    async until(pred, since = 0) {
      let found: readonly Peer[] | undefined;
      await wait(() => {
        found = reports.slice(since).find(pred);
        return found !== undefined;
      }, 'a matching peer report');
      return found ?? [];
    },
    untilStatus: (pred) => wait(() => pred(source.status()), 'a matching status'),
  };
}

const names = (peers: readonly Peer[]) => peers.map((p) => p.name);
const has = (name: string) => (peers: readonly Peer[]) => peers.some((p) => p.name === name);
const lacks = (name: string) => (peers: readonly Peer[]) => !has(name)(peers);

async function seed(api: KubeApi): Promise<void> {
  await api.put(nodeObject(SELF, ['192.0.2.11'], ['10.244.1.0/24', 'fd00:10:244:1::/64']));
  await api.put(nodeObject('node-b', ['192.0.2.12'], ['10.244.2.0/24', 'fd00:10:244:2::/64']));
  await api.put(nodeObject('node-c', ['192.0.2.13', '2001:db8::13'], ['10.244.3.0/24']));
}

/** Time from `change` resolving to the report that satisfies `pred`, for the printed figures. */
async function timed(w: Watcher, change: () => Promise<unknown>, pred: (p: readonly Peer[]) => boolean) {
  const since = w.reports.length;
  const t0 = performance.now();
  await change();
  const peers = await w.until(pred, since);
  return { peers, ms: performance.now() - t0 };
}

describe('Kubernetes peer source against a fake API server', () => {
  test('initial list: every other node with its InternalIPs and podCIDRs, this node excluded; one watch with bookmarks', async (t) => {
    const api = await useKubeApi(t);
    await seed(api);
    // spec.podCIDR only (an API server before dual-stack) and a node without a podCIDR yet.
    const old = nodeObject('node-d', ['192.0.2.14'], []);
    await api.put({ ...old, spec: { podCIDR: '10.244.4.0/24' } });
    await api.put(nodeObject('node-e', ['192.0.2.15'], []));
    const w = watchPeers(t, api);
    const first = await w.until(() => true);
    expect(first).toEqual([
      { name: 'node-b', addresses: ['192.0.2.12'], podCIDRs: ['10.244.2.0/24', 'fd00:10:244:2::/64'] },
      { name: 'node-c', addresses: ['192.0.2.13', '2001:db8::13'], podCIDRs: ['10.244.3.0/24'] },
      { name: 'node-d', addresses: ['192.0.2.14'], podCIDRs: ['10.244.4.0/24'] },
      { name: 'node-e', addresses: ['192.0.2.15'], podCIDRs: [] },
    ]);
    await api.watching();
    const status = w.source.status();
    expect(status).toMatchObject({ kind: 'kubernetes', watchRestarts: 0, lastError: null });
    expect(Date.parse(status.lastSync ?? '')).not.toBeNaN();
    const stats = await api.stats();
    expect(stats.lists).toBe(1);
    expect(stats.watches).toHaveLength(1);
    expect(stats.watches[0]).toMatchObject({ resourceVersion: stats.resourceVersion, allowWatchBookmarks: true });
    expect(stats.watches[0]?.timeoutSeconds).toBeGreaterThanOrEqual(300);
    expect(stats.watches[0]?.timeoutSeconds).toBeLessThanOrEqual(600);
  });

  test('an empty cluster (only this node) is reported as an empty set', async (t) => {
    const api = await useKubeApi(t);
    await api.put(nodeObject(SELF, ['192.0.2.11'], ['10.244.1.0/24']));
    const w = watchPeers(t, api);
    expect(await w.until(() => true)).toEqual([]);
  });

  test('nodes added, changed (new InternalIP) and deleted reach the listener, each as one whole set', async (t) => {
    const api = await useKubeApi(t);
    await seed(api);
    const w = watchPeers(t, api);
    await w.until(has('node-c'));
    const add = await timed(w, () => api.put(nodeObject('node-d', ['192.0.2.14'], ['10.244.4.0/24'])), has('node-d'));
    expect(names(add.peers)).toEqual(['node-b', 'node-c', 'node-d']);
    const change = await timed(
      w,
      () => api.put(nodeObject('node-b', ['192.0.2.112', '2001:db8::12'], ['10.244.2.0/24', 'fd00:10:244:2::/64'])),
      (p) => p.find((x) => x.name === 'node-b')?.addresses[0] === '192.0.2.112',
    );
    expect(change.peers.find((p) => p.name === 'node-b')).toEqual({
      name: 'node-b',
      addresses: ['192.0.2.112', '2001:db8::12'],
      podCIDRs: ['10.244.2.0/24', 'fd00:10:244:2::/64'],
    });
    const del = await timed(w, () => api.delete('node-c'), lacks('node-c'));
    expect(names(del.peers)).toEqual(['node-b', 'node-d']);
    // A change to this node itself, or one that leaves every peer as it was, is not reported.
    const before = w.reports.length;
    await api.put(nodeObject(SELF, ['192.0.2.99'], ['10.244.1.0/24']));
    const same = nodeObject('node-d', ['192.0.2.14'], ['10.244.4.0/24']);
    await api.put({ ...same, metadata: { ...same.metadata, labels: { role: 'changed' } } });
    await api.put(nodeObject('node-f', ['192.0.2.16'], ['10.244.6.0/24']));
    await w.until(has('node-f'), before);
    expect(w.reports.slice(before).map(names)).toEqual([['node-b', 'node-d', 'node-f']]);
    expect((await api.stats()).lists).toBe(1);
    console.log(
      `kube-source: change → listener: add ${add.ms.toFixed(1)} ms, InternalIP ${change.ms.toFixed(1)} ms, ` +
        `delete ${del.ms.toFixed(1)} ms (loopback, noisy shared machine)`,
    );
  });

  test('a bookmark moves the resourceVersion a resumed watch starts from; no relist', async (t) => {
    const api = await useKubeApi(t);
    await seed(api);
    const w = watchPeers(t, api);
    await w.until(has('node-c'));
    await api.watching();
    const syncBefore = w.source.status().lastSync;
    const rv = await api.bookmark();
    await w.untilStatus((s) => s.lastSync !== syncBefore);
    expect(await api.drop()).toBe(1);
    await w.untilStatus((s) => s.watchRestarts === 1);
    // The source counts the restart as it sends the request: wait for the server to have it open.
    await api.watching();
    const stats = await api.stats();
    expect(stats.lists).toBe(1);
    expect(stats.watches.map((x) => x.resourceVersion)).toEqual([String(Number(rv) - 1), rv]);
    // A bookmark is no change: the listener heard only the initial list.
    expect(w.reports).toHaveLength(1);
  });

  test.for([
    ['an ERROR event mid-watch', 'expire'],
    ['an ERROR event when the watch resumes', 'event'],
    ['HTTP 410 when the watch resumes', 'http'],
  ] as const)(
    '410 Gone as %s: relist, and the set is exactly the new state (nothing lost, no phantom)',
    async ([, how], t) => {
      const api = await useKubeApi(t);
      await seed(api);
      const w = watchPeers(t, api);
      await w.until(has('node-c'));
      await api.watching();
      // Changes the watch never sees: the API server compacted them away.
      await api.delete('node-b', { silent: true });
      await api.put(nodeObject('node-d', ['192.0.2.14'], ['10.244.4.0/24']), { silent: true });
      await api.put(nodeObject('node-c', ['192.0.2.113'], ['10.244.3.0/24']), { silent: true });
      const since = w.reports.length;
      if (how === 'expire') {
        await api.expire();
      } else {
        await api.compact(how);
        await api.drop();
      }
      const after = await w.until(has('node-d'), since);
      expect(after).toEqual([
        { name: 'node-c', addresses: ['192.0.2.113'], podCIDRs: ['10.244.3.0/24'] },
        { name: 'node-d', addresses: ['192.0.2.14'], podCIDRs: ['10.244.4.0/24'] },
      ]);
      // One report for the relist: the listener never saw a half-applied list.
      expect(w.reports.slice(since)).toHaveLength(1);
      const stats = await api.stats();
      expect(stats.lists).toBe(2);
      await w.untilStatus((s) => s.lastError === null && s.watchRestarts >= 1);
      // The watch goes on from the relist: a later change still arrives.
      await api.put(nodeObject('node-e', ['192.0.2.15'], ['10.244.5.0/24']));
      await w.until(has('node-e'));
    },
  );

  test('a dropped connection restarts the watch from the last resourceVersion, without a relist', async (t) => {
    const api = await useKubeApi(t);
    await seed(api);
    const w = watchPeers(t, api);
    await w.until(has('node-c'));
    for (const n of [1, 2, 3]) {
      await api.watching();
      expect(await api.drop()).toBe(1);
      await w.untilStatus((s) => s.watchRestarts === n);
      await api.put(nodeObject(`node-x${n}`, [`192.0.2.${20 + n}`], [`10.244.${20 + n}.0/24`]));
      await w.until(has(`node-x${n}`));
    }
    const stats = await api.stats();
    expect(stats.lists).toBe(1);
    expect(stats.watches).toHaveLength(4);
    expect(w.source.status()).toMatchObject({ watchRestarts: 3, lastError: null });
  });

  test('API server away: retries with a growing, bounded back-off, then recovers what changed meanwhile', async (t) => {
    const api = await useKubeApi(t);
    await seed(api);
    const backoff = { initialMs: 50, maxMs: 400 };
    const w = watchPeers(t, api, backoff);
    await w.until(has('node-c'));
    await api.stop();
    const retries = () => w.logs.filter((l) => typeof l.retryInMs === 'number');
    await w.untilStatus(() => retries().length >= 6);
    const status = w.source.status();
    expect(status.lastError).toMatch(/^kubernetes api: .*ECONNREFUSED/);
    expect(status.watchRestarts).toBeGreaterThanOrEqual(5);
    // The API server's store moved on while nobody could watch it.
    await api.put(nodeObject('node-d', ['192.0.2.14'], ['10.244.4.0/24']));
    await api.delete('node-b');
    await api.start();
    const after = await w.until((p) => has('node-d')(p) && lacks('node-b')(p));
    expect(names(after)).toEqual(['node-c', 'node-d']);
    await w.untilStatus((s) => s.lastError === null);
    const seen = retries().map((l) => ({ failures: l.failures, retryInMs: l.retryInMs as number }));
    expect(seen.slice(0, 4).map((s) => s.failures)).toEqual([1, 2, 3, 4]);
    for (let i = 1; i < 4; i++) expect(seen[i]?.retryInMs).toBeGreaterThan(seen[i - 1]?.retryInMs ?? 0);
    for (const s of seen) expect(s.retryInMs).toBeLessThanOrEqual(backoff.maxMs);
  });

  test('5,000 nodes: the first report has them all, and one change is reported alone', async (t) => {
    const api = await useKubeApi(t);
    const count = 5_000;
    const cluster = Array.from({ length: count }, (_, i) =>
      nodeObject(`node-${i}`, [`10.${100 + (i >> 8)}.${i & 255}.1`], [`10.${(i >> 8) + 1}.${i & 255}.0/24`]),
    );
    await api.putMany(cluster);
    const t0 = performance.now();
    const w = watchPeers(t, api);
    const first = await w.until(() => true);
    const coldMs = performance.now() - t0;
    expect(first).toHaveLength(count);
    expect(first.find((p) => p.name === 'node-4999')).toEqual({
      name: 'node-4999',
      addresses: ['10.119.135.1'],
      podCIDRs: ['10.20.135.0/24'],
    });
    await api.watching();
    const change = await timed(
      w,
      () => api.put(nodeObject('node-17', ['10.200.0.17'], ['10.1.17.0/24'])),
      (p) => p.find((x) => x.name === 'node-17')?.addresses[0] === '10.200.0.17',
    );
    expect(change.peers).toHaveLength(count);
    expect(w.reports).toHaveLength(2);
    console.log(
      `kube-source, ${count} nodes: list → first report ${coldMs.toFixed(0)} ms; one change → report ` +
        `${change.ms.toFixed(1)} ms (in-process under vitest, loopback, noisy shared machine)`,
    );
  });

  test('stop() closes the watch, and no report comes after it', async (t) => {
    const api = await useKubeApi(t);
    await seed(api);
    const w = watchPeers(t, api);
    await w.until(has('node-c'));
    await api.watching();
    await w.source.stop();
    await api.idle();
    const reports = w.reports.length;
    await api.put(nodeObject('node-d', ['192.0.2.14'], ['10.244.4.0/24']));
    // A round trip through the server and a watch that would have been open: still nothing.
    expect((await api.stats()).openWatches).toBe(0);
    expect(w.reports).toHaveLength(reports);
  });

  test('stop() while the first list is in flight: no watch follows the list', async (t) => {
    const api = await useKubeApi(t);
    await seed(api);
    await api.hold();
    const w = watchPeers(t, api);
    await api.held();
    await w.source.stop();
    await api.release();
    // Nothing may happen now; give a watch that should not come ample time to show up anyway.
    const watch = api.watching().then(() => 'a watch was opened');
    const quiet = new Promise((resolve) => setTimeout(() => resolve('quiet'), 1_000));
    expect(await Promise.race([watch, quiet])).toBe('quiet');
    expect((await api.stats()).watches).toEqual([]);
    expect(w.reports).toEqual([]);
  });

  test('a malformed Node is skipped with a log line; the others are reported; it returns once valid', async (t) => {
    const api = await useKubeApi(t);
    await seed(api);
    const bad = nodeObject('node-m', ['not-an-ip'], ['10.244.9.0/24']);
    await api.put(bad);
    await api.put({ ...nodeObject('node-n', ['192.0.2.30'], []), spec: { podCIDRs: '10.244.10.0/24' } });
    const w = watchPeers(t, api);
    expect(names(await w.until(() => true))).toEqual(['node-b', 'node-c']);
    const skipped = () => w.logs.filter((l) => l.msg === 'skip malformed Node object').map((l) => l.node);
    expect(skipped().sort()).toEqual(['node-m', 'node-n']);
    // A valid node going bad leaves the set; fixed, it comes back.
    await api.put(nodeObject('node-c', ['192.0.2.13'], ['10.244.3.0/24', 'nonsense']));
    expect(names(await w.until(lacks('node-c')))).toEqual(['node-b']);
    expect(skipped()).toContain('node-c');
    await api.put(nodeObject('node-m', ['192.0.2.40'], ['10.244.9.0/24']));
    expect(names(await w.until(has('node-m')))).toEqual(['node-b', 'node-m']);
    expect(w.source.status().lastError).toBeNull();
  });
});

test('the fake API server runs inside a network namespace, driven from outside over its stdin/stdout', async (t) => {
  const ns = await useNetns(t, 'kubeapi');
  await inNetns(ns, 'ip', 'addr', 'add', '198.51.100.1/24', 'dev', 'lo');
  const api = await useKubeApi(t, { netns: ns, host: '198.51.100.1' });
  expect(api.url).toMatch(/^http:\/\/198\.51\.100\.1:\d+$/);
  await api.put(nodeObject('node-b', ['192.0.2.12'], ['10.244.2.0/24']));
  // A client inside the namespace reaches it with the kubeconfig's address.
  const fetchList = `fetch(${JSON.stringify(`${api.url}/api/v1/nodes`)}).then((r) => r.text()).then(console.log)`;
  const list = JSON.parse(await inNetns(ns, process.execPath, '-e', fetchList));
  expect(list).toMatchObject({ kind: 'NodeList', items: [{ metadata: { name: 'node-b' } }] });
  expect(list.metadata.resourceVersion).toBe((await api.stats()).resourceVersion);
  expect(readFileSync(api.kubeconfig, 'utf8')).toContain(`server: ${api.url}`);
});
