/**
 * ferryd's half of ADD as one use case, on the real state machine and group commit (a real SQLite file
 * and commit journal); the pod watch and the kubelet stand in as what they answer.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Allocation } from '@ferry/shared-types/api/allocations';
import { CniError, Code } from '@ferry/shared-types/errors';
import { parsePodNics } from '@ferry/shared-types/kube/pod-nics';
import pino from 'pino';
import { Counter } from 'prom-client';
import { expect, type TestContext, test } from 'vitest';
import { entryFileNameOf } from '../attachments/host-veth';
import { Lifecycle } from '../lifecycle';
import type { PodIntent } from '../pods/pod-intent';
import { NicRefusals } from '../pods/refusals';
import { GroupCommit } from '../store/group-commit';
import { addDevice, delegated, request, useAttachments } from '../testing/attachments-world';
import { Allocate } from './allocate';

const FE1 = '02:00:00:00:fe:01';
const POD = { namespace: 'team-a', name: 'web-1', uid: 'u1' };
const silent = pino({ level: 'silent' });

function useAdd(t: TestContext, annotation?: string) {
  /** What the API server and the kubelet answer now. */
  const answers = { annotation, kubelet: [FE1] };
  const w = useAttachments(t, {
    delegatedDevices: [{ mac: FE1, group: 'frontend' }],
    devicePlugin: { groups: ['frontend'] },
  });
  addDevice(w, FE1, 'frontend', 'ens1f0');
  const lifecycle = new Lifecycle();
  lifecycle.markReady();
  const refusals = new NicRefusals(silent);
  const asked: string[] = [];
  const intent = (): PodIntent => {
    if (answers.annotation === undefined) return { kind: 'absent' };
    const r = parsePodNics(answers.annotation);
    if ('problem' in r) throw new CniError(Code.InvalidPodIntent, r.problem);
    const pod = { ...POD, resourceVersion: '1', annotations: {} };
    return { kind: 'pod', pod, nics: r.nics };
  };
  const allocations = new Counter({ name: 'allocations', help: 'h', labelNames: ['network'], registers: [] });
  const add = new Allocate({
    attachments: w.attachments,
    writes: new GroupCommit(w.db),
    lifecycle,
    metrics: { allocations },
    storage: { errorOf: () => undefined },
    log: silent,
    pods: {
      podIntent: async (key) => {
        asked.push(`intent ${key.namespace}/${key.name}`);
        return intent();
      },
      refusals,
    },
    devicePlugin: {
      allocationOf: async (pod) => {
        asked.push(`kubelet ${pod?.namespace}/${pod?.name}`);
        return new Map([['frontend', answers.kubelet]]);
      },
    },
  });
  const count = async () => (await allocations.get()).values.reduce((n, v) => n + v.value, 0);
  return { w, add, lifecycle, refusals, asked, count, answers };
}

const allocate = (a: Allocate, containerId: string): Promise<Allocation> =>
  a.allocate(request(containerId, { pod: POD }), silent);

test('refused with code 11 unless ferryd is ready, asking no one and storing nothing', async (t) => {
  const s = useAdd(t);
  s.lifecycle.markDraining();
  await expect(allocate(s.add, 'c1')).rejects.toMatchObject({
    code: Code.TryAgainLater,
    message: 'ferryd is draining: try again later',
  });
  expect(s.asked).toEqual([]);
  expect(() => s.w.attachments.get('c1')).toThrow();
});

test("the pod's intent and the kubelet's allocation decide the plan; counted once, however often it is asked", async (t) => {
  const s = useAdd(t, JSON.stringify([{ group: 'frontend', ifName: 'fe0' }]));
  const plan = await allocate(s.add, 'c1');
  expect(s.asked.sort()).toEqual(['intent team-a/web-1', 'kubelet team-a/web-1']);
  expect(delegated(plan).map((n) => [n.ifName, n.mac])).toEqual([['fe0', FE1]]);
  expect(await allocate(s.add, 'c1')).toEqual(plan);
  expect(await s.count()).toBe(1);
});

test('a refused pod is remembered until an ADD of it succeeds', async (t) => {
  const s = useAdd(t, JSON.stringify([{ group: 'gpu' }]));
  await expect(allocate(s.add, 'c1')).rejects.toMatchObject({ code: Code.InvalidPodIntent });
  expect(s.refusals.of(POD.namespace, POD.name)).toMatchObject({ reason: 'unknown', code: Code.InvalidPodIntent });
  // The pod's annotation mended, the runtime's retry.
  s.answers.annotation = JSON.stringify([{ group: 'frontend' }]);
  await allocate(s.add, 'c1');
  expect(s.refusals.of(POD.namespace, POD.name)).toBeUndefined();
});

test("this attachment's journal entry is settled first (a repeated ADD of a journal-committed pod is 105); the others' once per turn, after the answers", async (t) => {
  const s = useAdd(t);
  s.answers.kubelet = [];
  const write = (a: Allocation) => {
    const entry = {
      version: 1,
      containerId: a.containerId,
      writtenAt: new Date(s.w.clock.now).toISOString(),
      network: a.network,
      ifName: a.ifName,
      generation: a.generation,
      nics: a.nics.map((n, k) => ({ ifName: n.ifName, mac: `02:00:00:00:00:0${k + 1}`, containerIfIndex: k + 2 })),
    };
    writeFileSync(join(s.w.journal.dir, entryFileNameOf(a.network, a.containerId, a.ifName)), JSON.stringify(entry));
  };
  write(await allocate(s.add, 'c1'));
  await expect(allocate(s.add, 'c1')).rejects.toMatchObject({ code: Code.AttachmentConflict });
  expect(s.w.settled).toEqual([{ promoted: 1, discarded: 0 }]);
  // Two pods' entries wait while two other ADDs are answered in one turn: one settle promotes both, after.
  const [c2, c3] = [await allocate(s.add, 'c2'), await allocate(s.add, 'c3')];
  await new Promise((resolve) => setImmediate(resolve));
  for (const a of [c2, c3]) write(a);
  s.w.settled.length = 0;
  await Promise.all([allocate(s.add, 'c4'), allocate(s.add, 'c5')]);
  expect(s.w.settled).toEqual([]);
  await new Promise((resolve) => setImmediate(resolve));
  expect(s.w.settled).toEqual([{ promoted: 2, discarded: 0 }]);
  expect(s.w.attachments.get('c2').interfaces[0]?.state).toBe('committed');
});
