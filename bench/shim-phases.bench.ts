/// <reference types="bun-types" />
/**
 * Where one ferry-cni ADD spends its time: runs sequential ADD/DEL pairs with logLevel debug and reads
 * the `ms` stamps (time since process start) of the shim's own log lines, so the phases add up to the
 * in-process time; the rest of the wall time is exec and exit. Prints medians per phase.
 *
 *   sudo pnpm --filter @ferry/bench bench:phases      (RUNS=60 by default)
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { type BenchNode, BIN, benchNode, dropPods, makePods, runInsideNode } from './lib/node';
import { exec } from './lib/proc';
import { fmt, median, printTable } from './lib/stats';

const RUNS = Number(process.env.RUNS ?? 60);
const MARKS = [
  ['config parsed', 'start-up, stdin, env, config check'],
  ['veth pair created while ferryd allocates', 'the pair over rtnetlink (peer born in the pod), request in flight'],
  ['ferryd answered', 'the rest of the allocate round trip'],
  ['veth pair created', 'the rest of the host side (address, up, routes)'],
  ['node sysctls set', 'proxy_arp and forwarding sysctls'],
  ['pod side configured', 'pod side over rtnetlink (socket made in the pod netns)'],
  ['committed', 'commit-journal entry written (or, without the journal, the commit round trip)'],
  ['added', 'result'],
] as const;

async function inside(node: BenchNode): Promise<void> {
  const log = join(node.dir, 'phases.log');
  const conf = {
    cniVersion: '1.0.0',
    name: 'ferry',
    type: 'ferry-cni',
    daemonSocket: node.socket,
    // As a node's conflist and ferryd's config agree: the commit journal sits next to this queue.
    deleteQueue: node.deleteQueue,
    logFile: log,
    logLevel: 'debug',
  };
  const env = (cmd: string, netns: string, i: number) => ({
    PATH: '/usr/sbin:/usr/bin:/sbin:/bin',
    CNI_COMMAND: cmd,
    CNI_CONTAINERID: `phase${i}`,
    CNI_NETNS: netns,
    CNI_IFNAME: 'eth0',
    CNI_PATH: BIN,
  });
  const pods = makePods(node, RUNS, 'p');
  const phases: number[][] = MARKS.map(() => []);
  const walls: number[] = [];
  const cpus: number[] = [];
  try {
    for (const [i, pod] of pods.entries()) {
      rmSync(log, { force: true });
      const add = await exec([join(BIN, 'ferry-cni')], env('ADD', pod, i), JSON.stringify(conf));
      if (add.exitCode !== 0) throw new Error(`ADD failed: ${add.stdout}`);
      walls.push(add.wallMs);
      cpus.push(add.cpuMs);
      const lines = readFileSync(log, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { ms: number; msg: string; path?: string });
      let prev = 0;
      const seen = new Set<string>();
      for (const line of lines) {
        const isCommit =
          line.msg === 'committed through the journal' ||
          (line.msg === 'ferryd answered' && line.path?.startsWith('/v1/endpoints'));
        const mark = isCommit ? 'committed' : line.msg;
        const k = MARKS.findIndex(([m]) => m === mark);
        if (k < 0 || seen.has(mark)) continue;
        seen.add(mark);
        phases[k]?.push(line.ms - prev);
        prev = line.ms;
      }
      await exec([join(BIN, 'ferry-cni')], env('DEL', pod, i), JSON.stringify(conf));
    }
  } finally {
    dropPods(pods);
  }
  const inProcess = phases.reduce((sum, p) => sum + median(p), 0);
  printTable(
    `ferry-cni ADD by phase (${RUNS} runs, medians, ms)`,
    ['phase', 'ms', 'what'],
    [
      ...MARKS.map(([m, what], k) => [m, fmt(median(phases[k] ?? [])), what]),
      ['= in the process', fmt(inProcess), 'sum of the medians above'],
      ['whole exec (wall)', fmt(median(walls)), 'fork+exec to exit, as the runtime sees it'],
      ['CPU of the exec', fmt(median(cpus)), 'user + system, the shim and the processes it ran'],
    ],
  );
}

const node = benchNode();
if (node) await inside(node);
else process.exit(await runInsideNode(import.meta.path));
