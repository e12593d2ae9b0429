/**
 * The IPAM reclaimer (packages/cns-daemon/src/ipam/reclaimer-service.ts) in-process against the stand-in
 * API server, with the real client library, leader election, informers and garbage collector: a deleted
 * node's blocks and claims stay (marked, held by the finalizer) while any pod is bound to it and go once
 * none is; two reclaimers elect one leader and never both act; a successor finishes the job.
 */
import type { IPBlockSpec } from '@ferry/shared-types/kube/ipam';
import pino from 'pino';
import { describe, expect, test } from 'vitest';
import type { PassReport } from '../../packages/cns-daemon/src/ipam/reclaimer';
import { ReclaimerService } from '../../packages/cns-daemon/src/ipam/reclaimer-service';
import { loadKubeConfig } from '../../packages/cns-daemon/src/kube/connection';
import { IpamApi } from '../../packages/cns-daemon/src/kube/ipam-api';
import { type KubeApi, nodeObject, podObject, useKubeApi } from '../fixtures/kube-api';
import type { Scope } from '../fixtures/scope';
import { waitFor } from '../fixtures/wait';

const log = pino({ level: 'silent' });
const RANGE = { network: 'ferry', family: 4 as const, cidr: '10.244.0.0/24', blockPrefixLength: 26 };
const spec = (node: string, cidr: string): IPBlockSpec => ({ network: 'ferry', family: 4, cidr, node });
const blockRef = (name: string) => ({ apiVersion: 'ferry.dev/v1alpha1', kind: 'IPBlock', name });

async function cluster(t: Scope) {
  const api = await useKubeApi(t);
  for (const n of ['node-a', 'node-b', 'node-c', 'node-d']) await api.put(nodeObject(n, ['192.0.2.1'], []));
  const nodes = await fetch(`${api.url}/api/v1/nodes`).then(
    (r) => r.json() as Promise<{ items: { metadata: { name: string; uid: string } }[] }>,
  );
  const uid = (n: string) => nodes.items.find((i) => i.metadata.name === n)?.metadata.uid ?? '';
  const client = new IpamApi({ kc: loadKubeConfig(api.kubeconfig) });
  return { api, client, uid };
}

/** A reclaimer as ferryd runs one, with short durations; its pass reports are recorded. */
function reclaimer(t: Scope, api: KubeApi, nodeName: string) {
  const kc = loadKubeConfig(api.kubeconfig);
  const service = new ReclaimerService({
    kc,
    api: new IpamApi({ kc }),
    nodeName,
    ranges: [RANGE],
    log,
    leaseDurationSec: 3,
    renewDeadlineMs: 2000,
    retryPeriodMs: 250,
    intervalMs: 500,
    minGapMs: 100,
    backoff: { initialMs: 50, maxMs: 400 },
  });
  const reports: PassReport[] = [];
  service.onPass((r) => reports.push(r));
  t.onTestFinished(() => service.stop());
  service.start();
  return { service, reports, nodeName };
}

const allReleased = (reports: PassReport[]) => reports.flatMap((r) => r.released);

describe('the IPAM reclaimer', () => {
  test('a deleted node: its blocks and claim stay while its pods exist, and go once they are deleted', async (t) => {
    const { api, client, uid } = await cluster(t);
    await client.createBlock(spec('node-a', '10.244.0.0/26'), uid('node-a'));
    await client.createBlock(spec('node-b', '10.244.0.64/26'), uid('node-b'));
    await client.createBlock(spec('node-b', '10.244.0.128/26'), uid('node-b'));
    const pod = { namespace: 'a', name: 'web-1', uid: 'p-1' };
    await client.createClaim(
      { address: '198.51.100.5', node: 'node-b', network: 'sriov', ifName: 'net1', pod },
      uid('node-b'),
    );
    await api.putPod(podObject('a', 'web-1', 'node-b'));
    await api.putPod(podObject('a', 'web-2', 'node-b'));
    const r = reclaimer(t, api, 'node-a');
    await waitFor('a first pass', async () => r.reports.length > 0, 20_000);
    const status = (await client.getRange('ferry', 4))?.status;
    expect(status).toMatchObject({ blocksTotal: 4, blocksHeld: 3, blocksFree: 1, nodes: 2 });

    await api.delete('node-b');
    await waitFor(
      'a pass that waits for node-b pods',
      async () => r.reports.some((p) => p.waitingForPods.includes('node-b')),
      20_000,
    );
    // The garbage collector marked them; the finalizer holds them while the pods exist.
    for (const name of ['ferry.v4.10-244-0-64-26', 'ferry.v4.10-244-0-128-26']) {
      expect((await api.getObject(blockRef(name)))?.metadata.deletionTimestamp, name).toBeDefined();
    }
    expect(allReleased(r.reports)).toEqual([]);
    await api.deletePod('a', 'web-1');
    await waitFor(
      'another pass that still waits',
      async () => r.reports.filter((p) => p.waitingForPods.includes('node-b')).length >= 2,
      20_000,
    );
    expect(await api.listObjects('ferry.dev/v1alpha1', 'IPBlock')).toHaveLength(3);

    await api.deletePod('a', 'web-2');
    await waitFor('the release', async () => allReleased(r.reports).length === 3, 20_000);
    expect(allReleased(r.reports).sort()).toEqual([
      'ferry.v4.10-244-0-128-26',
      'ferry.v4.10-244-0-64-26',
      'v4.198-51-100-5',
    ]);
    expect((await api.listObjects('ferry.dev/v1alpha1', 'IPBlock')).map((b) => (b.spec as IPBlockSpec).node)).toEqual([
      'node-a',
    ]);
    expect(await api.listObjects('ferry.dev/v1alpha1', 'IPClaim')).toEqual([]);
    await waitFor(
      'the range status to follow',
      async () => (await client.getRange('ferry', 4))?.status?.blocksHeld === 1,
      20_000,
    );
    // Every pod check was a LIST by spec.nodeName, never a cached answer.
    const podLists = (await api.stats()).requests.filter((q) => q.resource === 'pods' && q.verb === 'list');
    expect(podLists.length).toBeGreaterThanOrEqual(3);
  });

  test('two reclaimers: one leads and acts, the other never does; when the leader stops, the other finishes the job', async (t) => {
    const { api, client, uid } = await cluster(t);
    const a = reclaimer(t, api, 'node-a');
    const c = reclaimer(t, api, 'node-c');
    const both = [a, c];
    const overlaps: string[] = [];
    for (const x of both) {
      x.service.onPass(() => {
        if (a.service.isLeader() && c.service.isLeader()) overlaps.push(`both led at a pass of ${x.nodeName}`);
        if (!x.service.isLeader()) overlaps.push(`${x.nodeName} passed without leading`);
      });
    }
    await waitFor('a leader', async () => both.some((x) => x.service.isLeader()), 20_000);
    const leader = both.find((x) => x.service.isLeader());
    const other = both.find((x) => x !== leader);
    if (!leader || !other) throw new Error('no leader');
    await client.createBlock(spec('node-b', '10.244.0.64/26'), uid('node-b'));
    await api.delete('node-b');
    await waitFor('the leader release', async () => allReleased(leader.reports).length === 1, 20_000);
    expect(other.reports).toEqual([]);

    await leader.service.stop();
    await waitFor('the other to lead', async () => other.service.isLeader(), 20_000);
    await client.createBlock(spec('node-d', '10.244.0.128/26'), uid('node-d'));
    await api.delete('node-d');
    await waitFor('the successor release', async () => allReleased(other.reports).length === 1, 20_000);
    expect(overlaps).toEqual([]);
    expect(allReleased([...a.reports, ...c.reports]).sort()).toEqual([
      'ferry.v4.10-244-0-128-26',
      'ferry.v4.10-244-0-64-26',
    ]);
    // Each block was deleted once: nobody raced the leader for it.
    const deletes = (await api.briefStats()).requestCounts.find(
      (q) => q.verb === 'delete' && q.resource === 'ipblocks',
    );
    expect(deletes?.count).toBe(2);
  });
});
