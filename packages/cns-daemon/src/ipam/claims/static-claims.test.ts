import { join } from 'node:path';
import { Code } from '@ferry/shared-types/errors';
import pino from 'pino';
import { expect, test } from 'vitest';
import type { PodView } from '../../pods/pod';
import { BlockStore } from '../../store/blocks';
import { openDatabase } from '../../store/db';
import { tempDir } from '../../testing/harness';
import { type ClaimApi, type ClusterClaim, StaticClaims } from './static-claims';

/** The API server's IPClaims: create-if-absent on the address's name, delete by uid. */
function fakeClaims() {
  const objects = new Map<string, ClusterClaim>();
  let uid = 0;
  const state = { isAway: false };
  const api: ClaimApi = {
    async createClaim(spec) {
      if (state.isAway) throw new Error('connect ECONNREFUSED');
      const name = `v4.${spec.address.replaceAll('.', '-')}`;
      const existing = objects.get(name);
      if (existing) return { exists: existing };
      const created = { name, uid: `u${++uid}`, address: spec.address, node: spec.node, pod: spec.pod };
      objects.set(name, created);
      return { created };
    },
    async deleteClaim(claim) {
      if (state.isAway) throw new Error('connect ECONNREFUSED');
      if (objects.get(claim.name)?.uid !== claim.uid) return 'gone';
      objects.delete(claim.name);
      return 'released';
    },
  };
  return { objects, api, state };
}

const podOf = (name: string, addresses: string[]): PodView => ({
  namespace: 'team-a',
  name,
  uid: `uid-${name}`,
  resourceVersion: '1',
  annotations: { 'ferry.dev/nics': JSON.stringify([{ group: 'g', addresses }]) },
});

function useNode(t: Parameters<typeof tempDir>[0], nodeName: string, api: ClaimApi, pods: Map<string, PodView>) {
  const store = openDatabase(join(tempDir(t), 'ferry.db'));
  t.onTestFinished(() => store.close());
  return new StaticClaims({
    nodeName,
    api,
    store: new BlockStore(store.db),
    mayHave: (address) => address.startsWith('198.51.100.'),
    pods: () => ({ synced: true, get: (_ns, name) => pods.get(name) }),
    heldByPods: () => new Map(),
    primaryNetwork: 'pods',
    log: pino({ level: 'silent' }),
    now: Date.now,
  });
}

const nicsOf = (pod: PodView) => JSON.parse(pod.annotations['ferry.dev/nics'] ?? '[]');

test('a static address is held by one pod cluster-wide: the second is refused naming the owner pod and node', async (t) => {
  const cluster = fakeClaims();
  const pods = new Map<string, PodView>();
  const a = podOf('web-1', ['198.51.100.5/28']);
  const b = podOf('web-2', ['198.51.100.5/28']);
  pods.set(a.name, a);
  const n1 = useNode(t, 'node-1', cluster.api, pods);
  const n2 = useNode(t, 'node-2', cluster.api, new Map([[b.name, b]]));
  await n1.ensure(a, nicsOf(a), 1000);
  await n1.ensure(a, nicsOf(a), 1000);
  expect([...cluster.objects.values()].map((c) => `${c.address} ${c.pod.name} ${c.node}`)).toEqual([
    '198.51.100.5 web-1 node-1',
  ]);
  await expect(n2.ensure(b, nicsOf(b), 1000)).rejects.toMatchObject({
    code: Code.InvalidPodIntent,
    message:
      'pod team-a/web-2: annotation ferry.dev/nics: [0].addresses[0]: 198.51.100.5 is held by pod team-a/web-1 on node node-1',
  });
  // An address the namespace may not have is never claimed (the allocation refuses it, naming the range).
  const c = podOf('web-3', ['10.244.3.7/26']);
  await n2.ensure(c, nicsOf(c), 1000);
  expect(cluster.objects.size).toBe(1);
});

test('the API server away: code 11; the claim is given back once the pod is gone, retried until answered', async (t) => {
  const cluster = fakeClaims();
  const pods = new Map<string, PodView>();
  const a = podOf('web-1', ['198.51.100.5/28']);
  pods.set(a.name, a);
  const n1 = useNode(t, 'node-1', cluster.api, pods);
  cluster.state.isAway = true;
  await expect(n1.ensure(a, nicsOf(a), 500)).rejects.toMatchObject({ code: Code.TryAgainLater });
  cluster.state.isAway = false;
  await n1.ensure(a, nicsOf(a), 1000);
  await n1.release();
  expect(cluster.objects.size).toBe(1);
  pods.delete(a.name);
  cluster.state.isAway = true;
  await expect(n1.release()).rejects.toThrow(/ECONNREFUSED/);
  expect(cluster.objects.size).toBe(1);
  cluster.state.isAway = false;
  await n1.release();
  expect(cluster.objects.size).toBe(0);
});
