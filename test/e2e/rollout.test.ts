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
import { constants, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { netConf, newContainerId } from '../fixtures/conf';
import { ferryctl } from '../fixtures/ferryctl';
import { besideReadyFile, type Ferryd, type FerrydProcess, launchBeside } from '../fixtures/ferryd';
import { linkNames } from '../fixtures/kernel';
import { useNetns } from '../fixtures/netns';
import { useNode } from '../fixtures/node';
import { DIST_BIN } from '../fixtures/paths';
import { sh } from '../fixtures/sh';
import { runShim, type ShimRun } from '../fixtures/shim';
import { waitFor } from '../fixtures/wait';

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

/** Where postStartInstall puts ferry-cni and the conflist (the node's CNI dirs, stood in). */
const installedShim = (ferryd: Ferryd) => join(ferryd.dir, 'host', 'bin', 'ferry-cni');
const installedConflist = (ferryd: Ferryd) => join(ferryd.dir, 'host', 'net.d', '10-ferry.conflist');

/** The DaemonSet's postStart hook for a pod whose ferryd writes `readyFile`. */
function postStartInstall(ferryd: Ferryd, readyFile: string): Promise<{ exitCode: number; stderr: string }> {
  const conflist = join(ferryd.dir, 'in', '10-ferry.conflist');
  mkdirSync(join(ferryd.dir, 'in'), { recursive: true });
  writeFileSync(conflist, JSON.stringify({ cniVersion: '1.0.0', name: 'ferry', plugins: [{ type: 'ferry-cni' }] }));
  const host = (d: string) => join(ferryd.dir, 'host', d);
  const args = ['install', '--shim', `${DIST_BIN}/ferry-cni`, '--cni-bin-dir', host('bin'), '--conflist', conflist];
  return ferryctl(ferryd, ...args, '--cni-conf-dir', host('net.d'), '--ready-file', readyFile, '--wait-sec', '30');
}

/**
 * Runs `hook` with a FIFO where its ferryd's ready file will be, and resolves once the hook has opened it:
 * the hook reads that file only while it waits for its ferryd, after it has read and checked its inputs,
 * so from then on it is waiting. It then reads nothing (not served), then no file (its ferryd is not
 * there yet).
 */
async function untilWaiting<T>(
  readyFile: string,
  hook: () => Promise<T>,
  what: string,
): Promise<{ running: Promise<T> }> {
  await sh('mkfifo', readyFile);
  const running = hook();
  let fifo: FileHandle | undefined;
  await waitFor(
    `${what}: the postStart hook reading its ready file`,
    async () => {
      // Non-blocking: opening a FIFO to write fails (ENXIO) until a reader has it open.
      fifo = await open(readyFile, constants.O_WRONLY | constants.O_NONBLOCK).catch(() => undefined);
      return fifo !== undefined;
    },
    30_000,
  );
  rmSync(readyFile);
  await fifo?.close();
  // Wrapped: an async function's returned promise would be awaited.
  return { running };
}

test(`${ROLLOUTS} rollouts under continuous ADD/DEL churn: no failure, no wait, no queued DEL, nothing left`, async (t) => {
  // Addresses come back at the first reconcile pass a second after each DEL (ferryd's default period, 10 s):
  // the churn must not run the pool dry.
  const { node, ferryd } = await useNode(t, { logLevel: 'info', cooldownSec: 1 });
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
  // A failure below must not leave the churn running into the clean-up of its node, netns and files.
  t.onTestFinished(async () => {
    churning = false;
    await Promise.allSettled(workers);
  });
  // Churn first, so the first hand-over already meets requests in flight.
  await new Promise((r) => setTimeout(r, 500));

  const windows: { heldMs: number; held: number; releasedInMs: number }[] = [];
  let old: Pick<Ferryd, 'log' | 'stop'> | FerrydProcess = ferryd;
  for (let k = 0; k < ROLLOUTS; k++) {
    // The surge pod: its postStart hook starts while its ferryd does not serve yet (here: before it is
    // launched, so nothing else can tell the hook it is ready), and waits; ferry-cni stays as it was.
    const name = `ferryd-${k + 1}`;
    const before = existsSync(installedShim(ferryd)) ? statSync(installedShim(ferryd)).ino : undefined;
    const { running: installed } = await untilWaiting(
      besideReadyFile(ferryd, name),
      () => postStartInstall(ferryd, besideReadyFile(ferryd, name)),
      `rollout ${k + 1}`,
    );
    expect(
      existsSync(installedShim(ferryd)) ? statSync(installedShim(ferryd)).ino : undefined,
      `rollout ${k + 1}: nothing installed before the new ferryd serves`,
    ).toBe(before);
    // Its ferryd, beside the old one, on the same node, config and paths.
    const next: FerrydProcess = launchBeside(t, ferryd, node, { name });
    // Its ferryd logs ready right after it has written its ready file: the probe then passes.
    await untilLogged(next, 'ferryd ready', `rollout ${k + 1}`);
    const install = await installed;
    expect(install.exitCode, `rollout ${k + 1}: postStart install: ${install.stderr}`).toBe(0);
    // Installed (a new file renamed into place) after its ferryd's ready file was written.
    expect(statSync(installedShim(ferryd)).ino).not.toBe(before);
    expect(
      statSync(installedConflist(ferryd)).mtimeMs,
      `rollout ${k + 1}: the new ferry-cni went in after the new ferryd served`,
    ).toBeGreaterThanOrEqual(statSync(next.readyFile).mtimeMs);
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
