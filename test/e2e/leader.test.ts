/**
 * Leader election (packages/cns-daemon/src/kube/leader.ts) with several electors in-process against the
 * stand-in API server's Leases, over real HTTP: one leads at a time, a stopped leader hands over, a
 * leader that cannot renew (the API server away) stops before anyone else starts, a 409 on renew is
 * re-read (still ours: keep leading; someone else's: stop at once). Durations are short so the test is
 * quick; nothing asserts on time, only on the order of what the electors did.
 */
import pino from 'pino';
import { describe, expect, test } from 'vitest';
import { loadKubeConfig } from '../../packages/cns-daemon/src/kube/connection';
import { LeaderElector } from '../../packages/cns-daemon/src/kube/leader';
import { type KubeApi, useKubeApi } from '../fixtures/kube-api';
import type { Scope } from '../fixtures/scope';
import { waitFor } from '../fixtures/wait';

const LEASE = {
  apiVersion: 'coordination.k8s.io/v1',
  kind: 'Lease',
  namespace: 'ferry-system',
  name: 'ferry-ipam-reclaimer',
};
const log = pino({ level: 'silent' });

/** Electors sharing one record of who leads, which fails the test if two ever lead at once. */
function election(t: Scope, api: KubeApi) {
  const leading = new Set<string>();
  const events: string[] = [];
  const violations: string[] = [];
  const electors = new Map<string, LeaderElector>();
  const add = (identity: string) => {
    const e = new LeaderElector({
      kc: loadKubeConfig(api.kubeconfig),
      namespace: LEASE.namespace,
      name: LEASE.name,
      identity,
      leaseDurationSec: 3,
      renewDeadlineMs: 2000,
      retryPeriodMs: 250,
      log,
      onStartedLeading: (signal) => {
        if (leading.size > 0) violations.push(`${identity} started while ${[...leading].join(',')} led`);
        leading.add(identity);
        events.push(`${identity} started`);
        signal.addEventListener('abort', () => events.push(`${identity} aborted`));
      },
      onStoppedLeading: () => {
        leading.delete(identity);
        events.push(`${identity} stopped`);
      },
    });
    electors.set(identity, e);
    t.onTestFinished(() => e.stop());
    e.start();
    return e;
  };
  const leader = () => [...leading][0];
  const untilLeader = async (not?: string) => {
    await waitFor('a leader', async () => leading.size === 1 && leader() !== not, 20_000);
    return leader() ?? '';
  };
  return { add, electors, events, violations, leading, leader, untilLeader };
}

describe('leader election on a Lease', () => {
  test('three candidates: one leads; a stopped leader gives the lease up and another takes over; never two at once', async (t) => {
    const api = await useKubeApi(t);
    const el = election(t, api);
    for (const id of ['node-a', 'node-b', 'node-c']) el.add(id);
    const first = await el.untilLeader();
    const lease = await api.getObject(LEASE);
    expect(lease?.spec).toMatchObject({ holderIdentity: first, leaseDurationSeconds: 3, leaseTransitions: 0 });
    expect(lease?.spec).toMatchObject({ renewTime: expect.stringMatching(/\.\d{6}Z$/) });
    await el.electors.get(first)?.stop();
    expect(el.events).toEqual([`${first} started`, `${first} aborted`, `${first} stopped`]);
    const second = await el.untilLeader(first);
    expect(second).not.toBe(first);
    expect((await api.getObject(LEASE))?.spec).toMatchObject({ holderIdentity: second, leaseTransitions: 1 });
    expect(el.violations).toEqual([]);
    // The followers keep reading; only the leader writes (renewals), each an update carrying the resourceVersion.
    const counts = (await api.briefStats()).requestCounts.filter((c) => c.resource === 'leases');
    expect(counts.find((c) => c.verb === 'create')?.count).toBeGreaterThanOrEqual(1);
    expect(counts.find((c) => c.verb === 'get')?.count).toBeGreaterThan(0);
  });

  test('the API server away: the leader stops at its renew deadline and nobody leads; back, one leads again', async (t) => {
    const api = await useKubeApi(t);
    const el = election(t, api);
    el.add('node-a');
    el.add('node-b');
    const first = await el.untilLeader();
    await api.stop();
    await waitFor('the leader to stop', async () => el.leading.size === 0, 20_000);
    expect(el.events).toEqual([`${first} started`, `${first} aborted`, `${first} stopped`]);
    expect(el.electors.get(first)?.status().lastError).toMatch(/kubernetes api/);
    await api.start();
    await el.untilLeader();
    expect(el.violations).toEqual([]);
  });

  test('a 409 on renew: re-read; still ours, it keeps leading; taken by another writer, it stops at once', async (t) => {
    const api = await useKubeApi(t);
    const el = election(t, api);
    el.add('node-a');
    await el.untilLeader();
    await api.failNext('update', 409, 1, 'leases');
    await waitFor('the injected 409 answered', async () => {
      const updates = (await api.stats()).requests.filter((r) => r.verb === 'update' && r.resource === 'leases');
      return updates.length >= 3;
    });
    expect(el.events).toEqual(['node-a started']);
    // Another writer takes the Lease (an operator, or a candidate that judged it expired).
    const lease = await api.getObject(LEASE);
    if (!lease) throw new Error('no lease');
    await api.putObject({ ...lease, spec: { ...(lease.spec as object), holderIdentity: 'intruder' } });
    await waitFor('node-a to stop', async () => el.leading.size === 0);
    expect(el.events).toEqual(['node-a started', 'node-a aborted', 'node-a stopped']);
    expect(el.electors.get('node-a')?.status()).toMatchObject({ isLeader: false, leader: 'intruder' });
    // The intruder never renews: once its lease expires (as node-a observes it), node-a takes it again.
    await el.untilLeader();
    expect((await api.getObject(LEASE))?.spec).toMatchObject({ holderIdentity: 'node-a', leaseTransitions: 1 });
  });

  test('durations that cannot be safe are refused', async (t) => {
    const api = await useKubeApi(t);
    const make = (renewDeadlineMs: number, retryPeriodMs: number) =>
      new LeaderElector({
        kc: loadKubeConfig(api.kubeconfig),
        namespace: 'ns',
        name: 'l',
        identity: 'x',
        leaseDurationSec: 2,
        renewDeadlineMs,
        retryPeriodMs,
        log,
        onStartedLeading: () => {},
        onStoppedLeading: () => {},
      });
    expect(() => make(2000, 100)).toThrow(RangeError);
    expect(() => make(1000, 900)).toThrow(RangeError);
    expect(() => make(1000, 500)).not.toThrow();
  });
});
