/// <reference types="bun-types" />
/**
 * DEL with ferryd dead (issue 13 part 3): pods are added while ferryd serves, then ferryd is killed with
 * SIGKILL (its socket file stays behind, so connect() is refused) and the pods are deleted one by one;
 * half-way the socket file is removed (connect() finds no socket). Each DEL queues its intent and cleans
 * the pod's netns. Reference, same run, same way, alternating step by step: the ptp plugin's DEL (veth
 * pair and host-local release), the closest thing to an InfraNIC DEL among the reference plugins.
 *
 *   sudo pnpm --filter @ferry/bench bench:del-down      (RUNS=40 by default: RUNS refused + RUNS absent)
 */
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { type BenchNode, BIN, benchNode, dropPods, ferryConf, makePods, REF, runInsideNode } from './lib/node';
import { cniEnv, exec, type Op } from './lib/proc';
import { fmt, median, percentile, printTable } from './lib/stats';

const RUNS = Number(process.env.RUNS ?? 40);

function must(o: Op, what: string): Op {
  if (o.exitCode !== 0) throw new Error(`${what} failed: ${o.stdout}`);
  return o;
}

async function inside(node: BenchNode): Promise<void> {
  const hostLocal = join(node.dir, 'host-local');
  mkdirSync(hostLocal, { recursive: true });
  const ptpConf = JSON.stringify({
    cniVersion: '1.0.0',
    name: 'ref',
    type: 'ptp',
    ipam: { type: 'host-local', subnet: '10.246.0.0/16', dataDir: hostLocal },
  });
  const ferry = (command: string, pod: string, i: number) =>
    exec([join(BIN, 'ferry-cni')], cniEnv(command, pod, `down${i}`, 'eth0', BIN), ferryConf(node));
  const ptp = (command: string, pod: string, i: number) =>
    exec([join(REF, 'ptp')], cniEnv(command, pod, `ptp${i}`, 'eth0', REF), ptpConf);

  const n = 2 * RUNS;
  const ferryPods = makePods(node, n, 'f');
  const ptpPods = makePods(node, n, 'p');
  try {
    for (let i = 0; i < n; i++) {
      must(await ferry('ADD', ferryPods[i] as string, i), 'ferry ADD');
      must(await ptp('ADD', ptpPods[i] as string, i), 'ptp ADD');
    }
    process.kill(node.ferrydPid, 'SIGKILL');
    await Bun.sleep(200);
    const refused: number[] = [];
    const absent: number[] = [];
    const reference: number[] = [];
    for (let i = 0; i < n; i++) {
      // Half-way: the socket file goes too (a ferryd that never started, or a wiped /run).
      if (i === RUNS) rmSync(node.socket, { force: true });
      (i < RUNS ? refused : absent).push(must(await ferry('DEL', ferryPods[i] as string, i), 'ferry DEL').wallMs);
      reference.push(must(await ptp('DEL', ptpPods[i] as string, i), 'ptp DEL').wallMs);
    }
    const queued = readdirSync(node.deleteQueue).filter((f) => f.endsWith('.json')).length;
    if (queued !== n) throw new Error(`expected ${n} queued DELs, found ${queued}`);
    const ref = median(reference);
    const row = (what: string, s: number[]) => [
      what,
      fmt(median(s)),
      fmt(percentile(s, 95)),
      fmt(ref),
      fmt(median(s) / ref, 2),
    ];
    printTable(
      `DEL with ferryd dead (SIGKILL), ${RUNS} pods each way, alternating with ptp's DEL; wall ms of one exec`,
      ['measure', 'ferry p50', 'ferry p95', 'ptp p50', 'ratio'],
      [row('socket refused (file left behind)', refused), row('socket absent', absent)],
    );
    console.log(`\nevery DEL exited 0; ${queued} entries queued for ferryd.`);
  } finally {
    dropPods(ferryPods);
    dropPods(ptpPods);
  }
}

const node = benchNode();
if (node) await inside(node);
else process.exit(await runInsideNode(import.meta.path));
