/// <reference types="bun-types" />
/**
 * Pod teardown through containerd's CRI plugin, the kubelet's path, with ferryd dead (SIGKILL): PODS
 * InfraNIC pods are running, ferryd is killed, and each pod gets StopPodSandbox then RemovePodSandbox
 * (every call runs a DEL), one pod after another and then all at once; the baseline is the same with
 * ferryd up. After ferryd restarts and drains its queue, nothing may be held. Reuses the e2e fixtures
 * (test/fixtures: node, ferryd, containerd), with a prefix of its own. Goal (issue 13): the 10 pods
 * torn down one after another with ferryd dead in ≤ 3 s.
 *
 *   pnpm --filter @ferry/bench bench:cri       (PODS=10 by default)
 */
import { rmSync } from 'node:fs';
import { fmt, median, printTable } from './lib/stats';

// Before the fixtures load: their names (and an e2e run's sweep) go by this prefix.
process.env.FERRY_TEST_PREFIX = 'ferry-b-cri-';
const { ferryConflist } = await import('../test/fixtures/conf');
const { useContainerd } = await import('../test/fixtures/containerd');
const { useNode } = await import('../test/fixtures/node');
const { PID_DIR } = await import('../test/fixtures/paths');
const { manualScope } = await import('../test/fixtures/scope');

const PODS = Number(process.env.PODS ?? 10);

interface Round {
  wallMs: number;
  perPodMs: number[];
}

const scope = manualScope();
try {
  const { node, ferryd } = await useNode(scope, { logLevel: 'info' });
  const containerd = await useContainerd(scope, { node, conflist: ferryConflist(ferryd) });
  const { cri } = containerd;
  let batch = 0;

  const runPods = async (): Promise<string[]> => {
    batch++;
    const ids: string[] = [];
    for (let i = 0; i < PODS; i++) ids.push(await cri.runPodSandbox(containerd.podConfig(`b${batch}-pod-${i}`)));
    return ids;
  };
  const tearDown = async (id: string): Promise<number> => {
    const t0 = performance.now();
    await cri.stopPodSandbox(id);
    await cri.removePodSandbox(id);
    return performance.now() - t0;
  };
  const sequential = async (ids: string[]): Promise<Round> => {
    const t0 = performance.now();
    const perPodMs: number[] = [];
    for (const id of ids) perPodMs.push(await tearDown(id));
    return { wallMs: performance.now() - t0, perPodMs };
  };
  const together = async (ids: string[]): Promise<Round> => {
    const t0 = performance.now();
    const perPodMs = await Promise.all(ids.map(tearDown));
    return { wallMs: performance.now() - t0, perPodMs };
  };

  const upSeq = await sequential(await runPods());
  const upAll = await together(await runPods());
  const deadSeqIds = await runPods();
  const deadAllIds = await runPods();
  await ferryd.kill('SIGKILL');
  const deadSeq = await sequential(deadSeqIds);
  const deadAll = await together(deadAllIds);
  await ferryd.start();
  const endpoints = ((await ferryd.request('GET', '/v1/operator/endpoints')).json as { endpoints: unknown[] })
    .endpoints;
  const assigned = await ferryd.assignedAddresses();

  const row = (what: string, r: Round) => [what, fmt(r.wallMs, 0), fmt(median(r.perPodMs), 0)];
  printTable(
    `CRI pod teardown (StopPodSandbox + RemovePodSandbox), ${PODS} InfraNIC pods, containerd ${(await cri.version()).runtimeVersion}; ms`,
    ['ferryd', 'wall', 'per pod p50'],
    [
      row('up, one after another', upSeq),
      row('up, all at once', upAll),
      row('killed, one after another', deadSeq),
      row('killed, all at once', deadAll),
    ],
  );
  console.log(
    `after ferryd restarted: ${endpoints.length} endpoints, ${assigned.length} Assigned addresses (want 0, 0); goal: killed, one after another ≤ 3000 ms`,
  );
} finally {
  await scope.runCleanups();
  rmSync(PID_DIR, { recursive: true, force: true });
}
