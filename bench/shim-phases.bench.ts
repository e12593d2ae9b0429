/// <reference types="bun-types" />
/**
 * Where one ferry-cni ADD spends its time: runs sequential ADD/DEL pairs with logLevel debug and reads
 * the `ms` stamps (time since process start) of the shim's own log lines, so the phases add up to the
 * in-process time; the rest of the wall time is exec and exit. Prints medians per phase.
 *
 *   sudo pnpm --filter @ferry/bench bench:phases      (RUNS=60 by default)
 *   COMPARE=/path/to/other/checkout ...             that build's ferry-cni and ferryd too, ADD by ADD in
 *                                                   turn with this one's
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
  const builds = [
    { bin: BIN, ferryd: node },
    ...(node.compare ? [{ bin: node.compare.bin, ferryd: node.compare }] : []),
  ];
  const bins = builds.map((b) => b.bin);
  const confOf = (b: number) => ({
    cniVersion: '1.0.0',
    name: 'ferry',
    type: 'ferry-cni',
    daemonSocket: builds[b]?.ferryd.socket,
    // As a node's conflist and ferryd's config agree: the commit journal sits next to this queue.
    deleteQueue: builds[b]?.ferryd.deleteQueue,
    logFile: log,
    logLevel: 'debug',
  });
  const env = (bin: string, b: number, cmd: string, netns: string, i: number) => ({
    PATH: '/usr/sbin:/usr/bin:/sbin:/bin',
    CNI_COMMAND: cmd,
    CNI_CONTAINERID: `phase${b}x${i}`,
    CNI_NETNS: netns,
    CNI_IFNAME: 'eth0',
    CNI_PATH: bin,
  });
  const runs = bins.map((_, b) => ({
    pods: makePods(node, RUNS, `p${b}`),
    phases: MARKS.map((): number[] => []),
    walls: [] as number[],
    cpus: [] as number[],
  }));
  try {
    for (let i = 0; i < RUNS; i++) {
      for (const [b, bin] of bins.entries()) {
        const run = runs[b] as (typeof runs)[number];
        const pod = run.pods[i] as string;
        rmSync(log, { force: true });
        const add = await exec([join(bin, 'ferry-cni')], env(bin, b, 'ADD', pod, i), JSON.stringify(confOf(b)));
        if (add.exitCode !== 0) throw new Error(`ADD failed: ${add.stdout}`);
        run.walls.push(add.wallMs);
        run.cpus.push(add.cpuMs);
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
          run.phases[k]?.push(line.ms - prev);
          prev = line.ms;
        }
        await exec([join(bin, 'ferry-cni')], env(bin, b, 'DEL', pod, i), JSON.stringify(confOf(b)));
      }
    }
  } finally {
    for (const run of runs) dropPods(run.pods);
  }
  // One column per build (and with COMPARE, this build's over the other's), then what the phase is.
  const cells = (of: (run: (typeof runs)[number]) => number) => {
    const [mine, other] = runs.map(of) as [number, number | undefined];
    return [fmt(mine), ...(other === undefined ? [] : [fmt(other), fmt(mine / other, 2)])];
  };
  const inProcess = (run: (typeof runs)[number]) => run.phases.reduce((sum, p) => sum + median(p), 0);
  printTable(
    `ferry-cni ADD by phase (${RUNS} runs${bins.length > 1 ? ` each, alternating with ${node.compare?.bin}` : ''}, medians, ms)`,
    ['phase', 'ms', ...(bins.length > 1 ? ['compare', 'ratio'] : []), 'what'],
    [
      ...MARKS.map(([m, what], k) => [m, ...cells((run) => median(run.phases[k] ?? [])), what]),
      ['= in the process', ...cells(inProcess), 'sum of the medians above'],
      ['whole exec (wall)', ...cells((run) => median(run.walls)), 'fork+exec to exit, as the runtime sees it'],
      ['CPU of the exec', ...cells((run) => median(run.cpus)), 'user + system, the shim and the processes it ran'],
    ],
  );
}

const node = benchNode();
if (node) await inside(node);
else process.exit(await runInsideNode(import.meta.path));
