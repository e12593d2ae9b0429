/// <reference types="bun-types" />
/**
 * ferry-cni against Debian's reference plugins, in the same run, the same way: one op = one fork+exec
 * of the plugin with CNI env and stdin, from inside the node namespace. Reference: bridge + host-local
 * (ADD/DEL as one bridge exec, which execs host-local). Prints p50/p95 per op, CPU per op, peak RSS,
 * concurrency 8 and 32, a 110-pod burst, and the ratios Ferry/reference.
 *
 *   sudo pnpm bench:shim            PODS=200 by default (PODS=50 for a quick look)
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type BenchNode, BIN, benchNode, dropPods, makePods, REF, runInsideNode } from './lib/node';
import { exec, type Op, peakRssKiB, pool } from './lib/proc';
import { fmt, median, percentile, printTable } from './lib/stats';

const PODS = Number(process.env.PODS ?? 200);
const BURST = 110;
/** Concurrency runs and bursts are repeated, alternating the plugins; medians are reported. */
const ROUNDS = Number(process.env.ROUNDS ?? 3);

interface Impl {
  name: string;
  argv: string[];
  cniPath: string;
  conf: (node: BenchNode) => Record<string, unknown>;
}

const FERRY: Impl = {
  name: 'ferry',
  argv: [join(BIN, 'ferry-cni')],
  cniPath: BIN,
  conf: (node) => ({
    cniVersion: '1.0.0',
    name: 'ferry',
    type: 'ferry-cni',
    daemonSocket: node.socket,
    logFile: join(node.dir, 'cni.log'),
  }),
};
const REFERENCE: Impl = {
  name: 'bridge+host-local',
  argv: [join(REF, 'bridge')],
  cniPath: REF,
  conf: (node) => ({
    cniVersion: '1.0.0',
    name: 'ref',
    type: 'bridge',
    bridge: 'cni0',
    isGateway: true,
    ipMasq: true,
    ipam: { type: 'host-local', subnet: '10.245.0.0/16', dataDir: join(node.dir, 'host-local') },
  }),
};

function opArgs(impl: Impl, node: BenchNode, command: string, netns: string, i: number, prevResult?: string) {
  const conf = impl.conf(node);
  const stdin = prevResult ? JSON.stringify({ ...conf, prevResult: JSON.parse(prevResult) }) : JSON.stringify(conf);
  const env = {
    PATH: '/usr/sbin:/usr/bin:/sbin:/bin',
    CNI_COMMAND: command,
    CNI_CONTAINERID: `bench${impl.name.length}x${i}`,
    CNI_NETNS: netns,
    CNI_IFNAME: 'eth0',
    CNI_PATH: impl.cniPath,
  };
  return { env, stdin };
}

function op(impl: Impl, node: BenchNode, command: string, netns: string, i: number, prevResult?: string): Promise<Op> {
  const { env, stdin } = opArgs(impl, node, command, netns, i, prevResult);
  return exec(impl.argv, env, stdin);
}

/** The highest peak RSS over a few ADD/DEL pairs, in MiB. */
async function peakRssMiB(impl: Impl, node: BenchNode, pods: string[]): Promise<number> {
  let peak = 0;
  for (const [i, p] of pods.entries()) {
    for (const command of ['ADD', 'DEL']) {
      const { env, stdin } = opArgs(impl, node, command, p, 500_000 + i);
      peak = Math.max(peak, await peakRssKiB(impl.argv, env, stdin));
    }
  }
  return peak / 1024;
}

function must(o: Op, what: string): Op {
  if (o.exitCode !== 0) throw new Error(`${what} failed: ${o.stdout}`);
  return o;
}

interface Figures {
  add: Op[];
  check: Op[];
  del: Op[];
  c8: number[];
  c32: number[];
  burstAddMs: number;
  burstDelMs: number;
  rssMiB: number;
}

/**
 * Both plugins step by step, alternating, so that a busy spell of the shared machine hits both alike:
 * pod i's ADD by Ferry, then by the reference, and so on; concurrency runs and bursts alternate too,
 * ROUNDS times each, and their medians are kept.
 */
async function measureBoth(node: BenchNode): Promise<[Figures, Figures]> {
  const impls = [FERRY, REFERENCE] as const;
  const pods = impls.map((impl) => makePods(node, Math.max(PODS, BURST), impl === FERRY ? 'f' : 'r'));
  const figures = impls.map(
    (): Figures => ({ add: [], check: [], del: [], c8: [], c32: [], burstAddMs: 0, burstDelMs: 0, rssMiB: 0 }),
  ) as [Figures, Figures];
  try {
    for (const command of ['ADD', 'CHECK', 'DEL'] as const) {
      for (let i = 0; i < PODS; i++) {
        for (const [k, impl] of impls.entries()) {
          const f = figures[k] as Figures;
          const pod = pods[k]?.[i] as string;
          const prev = command === 'ADD' ? undefined : f.add[i]?.stdout;
          const o = must(await op(impl, node, command, pod, i, prev), `${impl.name} ${command}`);
          (command === 'ADD' ? f.add : command === 'CHECK' ? f.check : f.del).push(o);
        }
      }
    }
    const bursts: number[][][] = impls.map(() => [[], []]);
    for (let round = 0; round < ROUNDS; round++) {
      for (const [k, impl] of impls.entries()) {
        const f = figures[k] as Figures;
        const seq = (pods[k] ?? []).slice(0, PODS);
        for (const c of [8, 32]) {
          const idx = seq.map((_, i) => i);
          const adds = await pool(idx, c, async (i) => must(await op(impl, node, 'ADD', seq[i] as string, i), 'ADD'));
          await pool(idx, c, async (i) => must(await op(impl, node, 'DEL', seq[i] as string, i), 'DEL'));
          (c === 8 ? f.c8 : f.c32).push(...adds.map((o) => o.wallMs));
        }
        const burst = (pods[k] ?? []).slice(0, BURST);
        let t0 = performance.now();
        await Promise.all(burst.map(async (p, i) => must(await op(impl, node, 'ADD', p, i), 'burst ADD')));
        bursts[k]?.[0]?.push(performance.now() - t0);
        t0 = performance.now();
        await Promise.all(burst.map(async (p, i) => must(await op(impl, node, 'DEL', p, i), 'burst DEL')));
        bursts[k]?.[1]?.push(performance.now() - t0);
      }
    }
    for (const [k, impl] of impls.entries()) {
      const f = figures[k] as Figures;
      f.burstAddMs = median(bursts[k]?.[0] ?? []);
      f.burstDelMs = median(bursts[k]?.[1] ?? []);
      f.rssMiB = await peakRssMiB(impl, node, (pods[k] ?? []).slice(0, 10));
    }
    return figures;
  } finally {
    for (const p of pods) dropPods(p);
  }
}

async function inside(node: BenchNode): Promise<void> {
  mkdirSync(join(node.dir, 'host-local'), { recursive: true });
  // Warm both (page cache, first-run costs), then measure each in turn.
  for (const impl of [FERRY, REFERENCE]) {
    const [p] = makePods(node, 1, `w${impl.name.length}`);
    must(await op(impl, node, 'ADD', p as string, 999_999), 'warm-up ADD');
    must(await op(impl, node, 'DEL', p as string, 999_999), 'warm-up DEL');
    dropPods([p as string]);
  }
  const [f, r] = await measureBoth(node);
  const wall = (ops: Op[]) => ops.map((o) => o.wallMs);
  const row = (what: string, a: number, b: number, digits = 1) => [what, fmt(a, digits), fmt(b, digits), fmt(a / b, 2)];
  printTable(
    `ferry-cni vs ${REFERENCE.name} (${PODS} pods sequential, alternating; concurrency and bursts: ${ROUNDS} rounds; medians; ms)`,
    ['measure', 'ferry', 'reference', 'ratio'],
    [
      row('ADD p50', median(wall(f.add)), median(wall(r.add))),
      row('ADD p95', percentile(wall(f.add), 95), percentile(wall(r.add), 95)),
      row('CHECK p50', median(wall(f.check)), median(wall(r.check))),
      row('DEL p50', median(wall(f.del)), median(wall(r.del))),
      row('DEL p95', percentile(wall(f.del), 95), percentile(wall(r.del), 95)),
      row('CPU per ADD', median(f.add.map((o) => o.cpuMs)), median(r.add.map((o) => o.cpuMs)), 2),
      row('CPU per DEL', median(f.del.map((o) => o.cpuMs)), median(r.del.map((o) => o.cpuMs)), 2),
      row('ADD p50, 8 concurrent', median(f.c8), median(r.c8)),
      row('ADD p50, 32 concurrent', median(f.c32), median(r.c32)),
      row(`${BURST}-pod burst ADD wall`, f.burstAddMs, r.burstAddMs, 0),
      row(`${BURST}-pod burst DEL wall`, f.burstDelMs, r.burstDelMs, 0),
      row('peak RSS of one process (MiB)', f.rssMiB, r.rssMiB),
    ],
  );
  console.log(
    '\nreference = bridge (isGateway, ipMasq: the usual bridge conflist) exec, which execs host-local; ferry = ferry-cni exec (+ ferryd round trips).',
  );
}

const node = benchNode();
if (node) await inside(node);
else process.exit(await runInsideNode(import.meta.path));
