import {
  ADDRESSES_RELEASED_FINALIZER,
  blockNameOf,
  claimNameOf,
  type IPBlock,
  type IPClaim,
  type IPRange,
  type IPRangeSpec,
  type IPRangeStatus,
} from '@ferry/shared-types/kube/ipam';
import pino from 'pino';
import { describe, expect, test } from 'vitest';
import { KubeApiError } from '../kube/api-error';
import type { NodeFacts } from '../kube/node-facts';
import { nodesToReclaim, Reclaimer, type ReclaimerPorts, rangeStatusOf, verdictOf } from './reclaimer';

const NOW = Date.UTC(2026, 11, 1, 12, 0, 0);
const log = pino({ level: 'silent' });
const RANGE: IPRangeSpec = { network: 'ferry', family: 4, cidr: '10.244.0.0/24', blockPrefixLength: 26 };

function block(
  node: string,
  cidr: string,
  extra: { uid?: string; deleting?: boolean; assigned?: number } = {},
): IPBlock {
  return {
    apiVersion: 'ferry.dev/v1alpha1',
    kind: 'IPBlock',
    metadata: {
      name: blockNameOf('ferry', 4, cidr),
      uid: `b-${cidr}`,
      resourceVersion: '1',
      finalizers: [ADDRESSES_RELEASED_FINALIZER],
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: node, uid: extra.uid ?? `uid-${node}` }],
      ...(extra.deleting ? { deletionTimestamp: '2026-12-01T11:00:00Z' } : {}),
    },
    spec: { network: 'ferry', family: 4, cidr, node },
    ...(extra.assigned !== undefined ? { status: { assigned: extra.assigned } } : {}),
  };
}

function claim(node: string, address: string): IPClaim {
  return {
    apiVersion: 'ferry.dev/v1alpha1',
    kind: 'IPClaim',
    metadata: {
      name: claimNameOf(address),
      uid: `c-${address}`,
      resourceVersion: '1',
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: node, uid: `uid-${node}` }],
    },
    spec: { address, node, network: 'sriov', ifName: 'net1', pod: { namespace: 'a', name: 'p', uid: 'u' } },
  };
}

const ready = (node: string): NodeFacts => ({ uid: `uid-${node}`, notReadySinceMs: undefined });

/** The API server's side, in memory: nodes, pods per node, objects, and every write made. */
class FakeCluster implements ReclaimerPorts {
  synced = true;
  nodes = new Map<string, NodeFacts>();
  /** What the informer shows; default: the same as `nodes`. */
  cachedNodes: Map<string, NodeFacts> | undefined;
  pods = new Map<string, number>();
  objects: IPBlock[] = [];
  claimObjects: IPClaim[] = [];
  range: IPRange | undefined;
  writes: string[] = [];
  failPods = false;

  hasSynced = () => this.synced;
  blocks = () => this.objects;
  claims = () => this.claimObjects;
  node = (name: string) => (this.cachedNodes ?? this.nodes).get(name);
  getNode = async (name: string) => this.nodes.get(name);
  hasPodsOn = async (node: string) => {
    if (this.failPods)
      throw new KubeApiError('unavailable', `list pods on ${node}: kubernetes api: connect ECONNREFUSED`);
    return (this.pods.get(node) ?? 0) > 0;
  };
  releaseBlock = async (b: IPBlock) => {
    this.writes.push(`release ${b.metadata.name}`);
    const had = this.objects.some((o) => o.metadata.uid === b.metadata.uid);
    this.objects = this.objects.filter((o) => o.metadata.uid !== b.metadata.uid);
    return had ? ('released' as const) : ('gone' as const);
  };
  deleteClaim = async (c: IPClaim) => {
    this.writes.push(`delete ${c.metadata.name}`);
    this.claimObjects = this.claimObjects.filter((o) => o.metadata.uid !== c.metadata.uid);
    return 'released' as const;
  };
  applyRange = async (spec: IPRangeSpec) => {
    this.range ??= {
      apiVersion: 'ferry.dev/v1alpha1',
      kind: 'IPRange',
      metadata: { name: 'ferry.v4', uid: 'r', resourceVersion: '1', generation: 1 },
      spec,
    };
    return this.range;
  };
  updateRangeStatus = async (r: IPRange, status: IPRangeStatus) => {
    this.writes.push(`range status ${r.metadata.name}`);
    this.range = { ...r, status };
    return this.range;
  };
}

const reclaimer = (c: FakeCluster, notReadyGraceSec = 600) =>
  new Reclaimer(c, { ranges: [RANGE], notReadyGraceSec, log, now: () => NOW });
const live = () => new AbortController().signal;

describe('verdictOf', () => {
  test('deleted, re-created under a new uid, not Ready past the grace period; otherwise not gone', () => {
    expect(verdictOf(undefined, 'u', NOW, 600)).toBe('deleted');
    expect(verdictOf({ uid: 'new', notReadySinceMs: undefined }, 'old', NOW, 600)).toBe('replaced');
    expect(verdictOf({ uid: 'u', notReadySinceMs: NOW - 601_000 }, 'u', NOW, 600)).toBe('not-ready');
    expect(verdictOf({ uid: 'u', notReadySinceMs: NOW - 599_000 }, 'u', NOW, 600)).toBeUndefined();
    expect(verdictOf({ uid: 'u', notReadySinceMs: 0 }, 'u', NOW, 0)).toBeUndefined();
    expect(verdictOf({ uid: 'u', notReadySinceMs: undefined }, undefined, NOW, 600)).toBeUndefined();
  });

  test('nodesToReclaim groups a gone node blocks and claims; live holders are not candidates', () => {
    const nodes = new Map([['node-a', ready('node-a')]]);
    const gone = nodesToReclaim(
      [block('node-a', '10.244.0.0/26'), block('node-b', '10.244.0.64/26'), block('node-b', '10.244.0.128/26')],
      [claim('node-b', '198.51.100.5'), claim('node-a', '198.51.100.6')],
      (n) => nodes.get(n),
      NOW,
      600,
    );
    expect(gone.map((g) => [g.node, g.why, g.blocks.length, g.claims.length])).toEqual([['node-b', 'deleted', 2, 1]]);
  });
});

describe('Reclaimer.pass', () => {
  test('a deleted node: its blocks and claims stay while any pod is bound to it, and go once none is', async () => {
    const c = new FakeCluster();
    c.nodes.set('node-a', ready('node-a'));
    c.objects = [block('node-a', '10.244.0.0/26'), block('node-b', '10.244.0.64/26', { deleting: true })];
    c.claimObjects = [claim('node-b', '198.51.100.5')];
    c.pods.set('node-b', 2);
    const r = reclaimer(c);
    const first = await r.pass(live());
    expect(first.waitingForPods).toEqual(['node-b']);
    expect(c.writes.filter((w) => !w.startsWith('range'))).toEqual([]);
    c.pods.set('node-b', 0);
    const second = await r.pass(live());
    expect(second.released).toEqual(['ferry.v4.10-244-0-64-26', 'v4.198-51-100-5']);
    expect(c.writes.filter((w) => !w.startsWith('range'))).toEqual([
      'release ferry.v4.10-244-0-64-26',
      'delete v4.198-51-100-5',
    ]);
    expect(c.objects.map((b) => b.spec.node)).toEqual(['node-a']);
  });

  test('the fresh GET decides: a node the cache lacks but the API server has (just created) keeps its blocks', async () => {
    const c = new FakeCluster();
    c.nodes.set('node-b', ready('node-b'));
    c.cachedNodes = new Map();
    c.objects = [block('node-b', '10.244.0.64/26')];
    expect((await reclaimer(c).pass(live())).released).toEqual([]);
    expect(c.objects).toHaveLength(1);
  });

  test('a holder releasing its own block (marked, holder alive) and a NotReady node within grace are left alone', async () => {
    const c = new FakeCluster();
    c.nodes.set('node-a', ready('node-a'));
    c.nodes.set('node-b', { uid: 'uid-node-b', notReadySinceMs: NOW - 60_000 });
    c.nodes.set('node-c', { uid: 'uid-node-c', notReadySinceMs: NOW - 3_600_000 });
    c.objects = [
      block('node-a', '10.244.0.0/26', { deleting: true }),
      block('node-b', '10.244.0.64/26'),
      block('node-c', '10.244.0.128/26'),
    ];
    const report = await reclaimer(c).pass(live());
    expect(report.released).toEqual(['ferry.v4.10-244-0-128-26']);
    expect(c.objects.map((b) => b.spec.node)).toEqual(['node-a', 'node-b']);
  });

  test('a node re-created under a new uid: the old Node objects go, the new Node are not touched', async () => {
    const c = new FakeCluster();
    c.nodes.set('node-a', { uid: 'uid-new', notReadySinceMs: undefined });
    c.objects = [
      block('node-a', '10.244.0.0/26', { uid: 'uid-old' }),
      block('node-a', '10.244.0.64/26', { uid: 'uid-new' }),
    ];
    expect((await reclaimer(c).pass(live())).released).toEqual(['ferry.v4.10-244-0-0-26']);
  });

  test('nothing is written once leadership is lost, nor before the caches have synced; failures are reported, not thrown', async () => {
    const c = new FakeCluster();
    c.objects = [block('node-b', '10.244.0.64/26', { deleting: true })];
    const lost = new AbortController();
    lost.abort();
    await reclaimer(c).pass(lost.signal);
    c.synced = false;
    await reclaimer(c).pass(live());
    expect(c.writes).toEqual([]);
    c.synced = true;
    c.failPods = true;
    const report = await reclaimer(c).pass(live());
    expect(report.problems).toEqual([
      'reclaim the objects of node node-b: list pods on node-b: kubernetes api: connect ECONNREFUSED',
    ]);
    expect(c.objects).toHaveLength(1);
  });
});

describe('IPRange status', () => {
  test('counts held, releasing and free blocks and assigned addresses; Exhausted and NearlyExhausted; written only on change', async () => {
    const c = new FakeCluster();
    c.nodes.set('node-a', ready('node-a'));
    c.objects = [block('node-a', '10.244.0.0/26', { assigned: 5 }), block('node-a', '10.244.0.64/26', { assigned: 2 })];
    const r = reclaimer(c);
    await r.pass(live());
    expect(c.range?.status).toMatchObject({
      blocksTotal: 4,
      blocksHeld: 2,
      blocksFree: 2,
      blocksReleasing: 0,
      addressesAssigned: 7,
      nodes: 1,
      observedGeneration: 1,
    });
    expect(c.range?.status?.conditions?.map((x) => [x.type, x.status])).toEqual([
      ['Exhausted', 'False'],
      ['NearlyExhausted', 'False'],
    ]);
    await r.pass(live());
    expect(c.writes).toEqual(['range status ferry.v4']);
    c.objects.push(block('node-a', '10.244.0.128/26'), block('node-a', '10.244.0.192/26', { deleting: true }));
    await r.pass(live());
    expect(c.range?.status).toMatchObject({ blocksHeld: 3, blocksReleasing: 1, blocksFree: 0 });
    expect(c.range?.status?.conditions?.map((x) => [x.type, x.status])).toEqual([
      ['Exhausted', 'True'],
      ['NearlyExhausted', 'True'],
    ]);
  });

  test('condition transition times are kept while the status stays; huge IPv6 ranges are counted safely', () => {
    const before = rangeStatusOf(RANGE, [], undefined, '2026-12-01T00:00:00Z', 0.1);
    const after = rangeStatusOf(RANGE, [block('node-a', '10.244.0.0/26')], before, '2026-12-01T01:00:00Z', 0.1);
    expect(after.conditions?.map((x) => x.lastTransitionTime)).toEqual([
      '2026-12-01T00:00:00Z',
      '2026-12-01T00:00:00Z',
    ]);
    const full = rangeStatusOf(
      RANGE,
      ['0', '64', '128', '192'].map((o) => block('node-a', `10.244.0.${o}/26`)),
      after,
      '2026-12-01T02:00:00Z',
      0.1,
    );
    expect(full.conditions?.find((x) => x.type === 'Exhausted')).toMatchObject({
      status: 'True',
      lastTransitionTime: '2026-12-01T02:00:00Z',
    });
    const v6 = rangeStatusOf(
      { network: 'ferry', family: 6, cidr: 'fd00::/48', blockPrefixLength: 122 },
      [],
      undefined,
      'x',
      0.1,
    );
    expect(v6.blocksTotal).toBe(Number.MAX_SAFE_INTEGER);
    expect(rangeStatusOf({ ...RANGE, blockPrefixLength: 20 }, [], undefined, 'x', 0.1).blocksTotal).toBe(0);
  });
});
