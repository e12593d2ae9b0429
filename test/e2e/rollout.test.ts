/**
 * Upgrading ferryd without a window: ten rollouts run as the DaemonSet runs them with surge
 * (deploy/daemonset.yaml: maxSurge 1, maxUnavailable 0) — the new ferryd starts beside the old one,
 * takes over its database and socket, becomes ready, and only then is the old one sent SIGTERM — while
 * pods are added and deleted without pause through the real shim. No shim may fail, no ADD may wait for
 * readiness, no DEL may be queued, and nothing may be left behind. Each hand-over's window (from the old
 * ferryd holding its first request to the new one serving the socket) is measured and annotated. Each
 * surge pod's postStart hook (`ferryctl install --ready-file`) runs beside its ferryd and puts the CNI
 * files in only once that ferryd serves: a new ferry-cni never meets the old ferryd (the version-skew rule).
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { netConf, newContainerId } from '../fixtures/conf';
import { ferryctl } from '../fixtures/ferryctl';
import { type Ferryd, type FerrydProcess, launchBeside } from '../fixtures/ferryd';
import { linkNames } from '../fixtures/kernel';
import { useNetns } from '../fixtures/netns';
import { useNode } from '../fixtures/node';
import { DIST_BIN } from '../fixtures/paths';
import { runShim, type ShimRun } from '../fixtures/shim';

const ROLLOUTS = 10;
// Two workers keep ADD/DEL going through every hand-over (each meets requests in flight and held ones)
// without making the test the CI's longest on two cores; 10 rollouts take ~50 s there when idle.
const WORKERS = 2;

interface LogLine {
  msg: string;
  pid: number;
  time: number;
  heldMs?: number;
  held?: number;
  releasedInMs?: number;
}

const lines = (text: string): LogLine[] =>
  text
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine);

async function untilLogged(p: { log(): string }, msg: string, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (lines(p.log()).some((l) => l.msg === msg)) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`${what}: no "${msg}" within 30 s:\n${p.log()}`);
}

/** The DaemonSet's readiness probe of a pod whose ferryd writes `readyFile`: its exit code. */
const probe = async (ferryd: Ferryd, readyFile: string) =>
  (await ferryctl(ferryd, 'health', '--ready', '--ready-file', readyFile)).exitCode;

/** The DaemonSet's postStart hook for a pod whose ferryd writes `readyFile`: resolves with when it ended. */
function postStartInstall(
  ferryd: Ferryd,
  readyFile: string,
): Promise<{ exitCode: number; stderr: string; atMs: number }> {
  const conflist = join(ferryd.dir, 'in', '10-ferry.conflist');
  mkdirSync(join(ferryd.dir, 'in'), { recursive: true });
  writeFileSync(conflist, JSON.stringify({ cniVersion: '1.0.0', name: 'ferry', plugins: [{ type: 'ferry-cni' }] }));
  const host = (d: string) => join(ferryd.dir, 'host', d);
  const args = ['install', '--shim', `${DIST_BIN}/ferry-cni`, '--cni-bin-dir', host('bin'), '--conflist', conflist];
  return ferryctl(ferryd, ...args, '--cni-conf-dir', host('net.d'), '--ready-file', readyFile, '--wait-sec', '30').then(
    (r) => ({ exitCode: r.exitCode, stderr: r.stderr, atMs: Date.now() }),
  );
}

test(`${ROLLOUTS} rollouts under continuous ADD/DEL churn: no failure, no wait, no queued DEL, nothing left`, async (t) => {
  // Addresses come back a second after each DEL: the churn must not run the pool dry.
  const { node, ferryd } = await useNode(t, { logLevel: 'info', cooldownSec: 1, reconcile: { intervalSec: 1 } });
  const conf = netConf(ferryd, { deleteQueue: ferryd.deleteQueue, logLevel: 'info' });
  const pods = await Promise.all(Array.from({ length: WORKERS }, () => useNetns(t, 'pod')));
  const runs: { cmd: string; r: ShimRun; atMs: number }[] = [];
  let churning = true;
  const churn = async (i: number) => {
    for (let n = 0; churning || n === 0; n++) {
      const call = { containerId: newContainerId(), ifName: 'eth0', netns: pods[i], conf };
      for (const cmd of ['ADD', 'DEL'] as const)
        runs.push({ cmd, r: await runShim(node, cmd, call), atMs: Date.now() });
    }
  };
  const workers = Array.from({ length: WORKERS }, (_, i) => churn(i));
  // Churn first, so the first hand-over already meets requests in flight.
  await new Promise((r) => setTimeout(r, 500));

  const windows: { heldMs: number; held: number; releasedInMs: number }[] = [];
  let old: Pick<Ferryd, 'log' | 'stop'> | FerrydProcess = ferryd;
  for (let k = 0; k < ROLLOUTS; k++) {
    // The surge pod: beside the old one, on the same node, config and paths.
    const next: FerrydProcess = launchBeside(t, ferryd, node);
    const installed = postStartInstall(ferryd, next.readyFile);
    // Its ferryd logs ready right after it has written its ready file: the probe then passes.
    await untilLogged(next, 'ferryd ready', `rollout ${k + 1}`);
    const install = await installed;
    expect(install.exitCode, `rollout ${k + 1}: postStart install: ${install.stderr}`).toBe(0);
    const readyAtMs = lines(next.log()).find((l) => l.msg === 'ferryd ready')?.time ?? Number.POSITIVE_INFINITY;
    expect(
      install.atMs,
      `rollout ${k + 1}: the new ferry-cni went in after the new ferryd served`,
    ).toBeGreaterThanOrEqual(readyAtMs);
    expect(await probe(ferryd, next.readyFile), `rollout ${k + 1}: the new pod is ready`).toBe(0);
    const handedOver = lines(old.log())
      .filter((l) => l.msg.startsWith('handed over'))
      .at(-1);
    const released = lines(old.log())
      .filter((l) => l.msg.startsWith('handing over: database closed'))
      .at(-1);
    windows.push({
      heldMs: handedOver?.heldMs ?? Number.NaN,
      held: handedOver?.held ?? Number.NaN,
      releasedInMs: released?.releasedInMs ?? Number.NaN,
    });
    // The old pod's own probe now says it no longer serves (its ready file went with the hand-over).
    if ('readyFile' in old) expect(await probe(ferryd, old.readyFile), `rollout ${k + 1}: the old pod`).toBe(1);
    // Ready: the DaemonSet deletes the old pod.
    await old.stop();
    old = next;
  }
  churning = false;
  await Promise.all(workers);

  const failed = runs.filter(({ r }) => r.exitCode !== 0).map(({ cmd, r }) => `${cmd}: ${r.stdout}`);
  expect(failed).toEqual([]);
  expect(
    windows.every((w) => Number.isFinite(w.heldMs)),
    JSON.stringify(windows),
  ).toBe(true);
  const shimLog = lines(readFileSync(`${ferryd.dir}/cni.log`, 'utf8'));
  for (const msg of [
    'ferryd not ready; waiting',
    'DEL queued for ferryd to apply',
    'ferryd unreachable; trying again',
  ]) {
    expect(shimLog.filter((l) => l.msg === msg).length, msg).toBe(0);
  }
  expect(readdirSync(ferryd.deleteQueue).filter((f) => f.endsWith('.json'))).toEqual([]);
  expect(await ferryd.assignedAddresses()).toEqual([]);
  expect(await linkNames(node)).toEqual(['lo']);

  const ms = runs.map(({ r }) => r.ms).sort((a, b) => a - b);
  const heldMs = windows.map((w) => w.heldMs).sort((a, b) => a - b);
  t.annotate(
    `${runs.length} shim runs over ${ROLLOUTS} rollouts; shim ms p50 ${ms[Math.floor(ms.length / 2)]?.toFixed(0)}, ` +
      `max ${ms.at(-1)?.toFixed(0)}; hand-over window (requests held) ms p50 ${heldMs[Math.floor(heldMs.length / 2)]}, ` +
      `max ${heldMs.at(-1)}; requests held per hand-over ${windows.map((w) => w.held).join(',')}; ` +
      `old ferryd released its database in ms ${windows.map((w) => w.releasedInMs).join(',')}`,
  );
}, 300_000);
