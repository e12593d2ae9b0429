/// <reference types="bun-types" />
/**
 * ferry-cni against the reference plugin doing the same work, in the same run, the same way: one op = one
 * fork+exec of the plugin with CNI env and stdin, from inside the node namespace.
 *
 * Equal work: Ferry's InfraNIC is a routed veth (host route per pod address, no bridge, no masquerade), so
 * the reference is `ptp` + `host-local` with `ipMasq: false` and a default route, IPv4-only on both sides
 * (the bench node's ferryd has only an ipv4 pool). The plugins alternate step by step.
 *
 * Node CPU per pod lifecycle (ADD + CHECK + DEL) counts everything the node spends on a pod: the plugin
 * processes and every process they wait for (rusage of the exec), and for Ferry also ferryd's own CPU over
 * the sequential run (/proc/PID/stat before and after), divided by the pods. ptp and host-local have no
 * daemon.
 *
 *   sudo pnpm --filter @ferry/bench bench:shim      PODS=100 by default (PODS=30 for a quick look)
 *   COMPARE=/path/to/other/dist/bin ...             that build's ferry-cni in the reference's place, step
 *                                                   by step against the same ferryd (this build's)
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type BenchNode, BIN, benchNode, dropPods, makePods, REF, runInsideNode } from './lib/node';
import { exec, type Op, peakRssKiB, processCpuMs, sh } from './lib/proc';
import { fmt, median, percentile, printTable } from './lib/stats';

const PODS = Number(process.env.PODS ?? 100);
const BURST = 110;
/** Bursts are repeated, alternating the plugins; medians are reported. */
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
    // As a node's conflist and ferryd's config agree: the commit journal sits next to this queue.
    deleteQueue: node.deleteQueue,
  }),
};
const PTP: Impl = {
  name: 'ptp+host-local',
  argv: [join(REF, 'ptp')],
  cniPath: REF,
  conf: (node) => ({
    cniVersion: '1.0.0',
    name: 'ref',
    type: 'ptp',
    ipMasq: false,
    ipam: {
      type: 'host-local',
      subnet: '10.245.0.0/16',
      routes: [{ dst: '0.0.0.0/0' }],
      dataDir: join(node.dir, 'host-local'),
    },
  }),
};

/** Another build's shim, for a before/after comparison in one run (the container IDs differ by name length). */
const REFERENCE: Impl = process.env.COMPARE
  ? { ...FERRY, name: 'compare', argv: [join(process.env.COMPARE, 'ferry-cni')], cniPath: process.env.COMPARE }
  : PTP;

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

/** Links in the node namespace other than lo: after every DEL there must be none. */
function nodeLinksLeft(): string[] {
  const links = JSON.parse(sh(['ip', '-j', 'link', 'show'])) as { ifname: string }[];
  return links.map((l) => l.ifname).filter((n) => n !== 'lo');
}

async function ferrydEndpointsLeft(node: BenchNode): Promise<number> {
  const r = await fetch('http://ferryd/v1/operator/endpoints', { unix: node.socket });
  return ((await r.json()) as { endpoints: unknown[] }).endpoints.length;
}

interface Figures {
  add: Op[];
  check: Op[];
  del: Op[];
  /** CPU of a daemon over the sequential run (ferryd; 0 for the reference). */
  daemonCpuMs: number;
  burstAddMs: number;
  burstDelMs: number;
  rssMiB: number;
}

/**
 * Both plugins step by step, alternating, so that a busy spell of the shared machine hits both alike:
 * pod i's ADD by Ferry, then by the reference, and so on; bursts alternate too, ROUNDS times, and their
 * medians are kept. ferryd's CPU is read around the sequential part, where it serves only Ferry.
 */
async function measureBoth(node: BenchNode): Promise<[Figures, Figures]> {
  const impls = [FERRY, REFERENCE] as const;
  const pods = impls.map((impl) => makePods(node, Math.max(PODS, BURST), impl === FERRY ? 'f' : 'r'));
  const figures = impls.map(
    (): Figures => ({ add: [], check: [], del: [], daemonCpuMs: 0, burstAddMs: 0, burstDelMs: 0, rssMiB: 0 }),
  ) as [Figures, Figures];
  try {
    const ferrydCpu0 = processCpuMs(node.ferrydPid);
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
    figures[0].daemonCpuMs = processCpuMs(node.ferrydPid) - ferrydCpu0;
    const bursts: number[][][] = impls.map(() => [[], []]);
    for (let round = 0; round < ROUNDS; round++) {
      for (const [k, impl] of impls.entries()) {
        const burst = (pods[k] ?? []).slice(0, BURST);
        let t0 = performance.now();
        await Promise.all(burst.map(async (p, i) => must(await op(impl, node, 'ADD', p, i), 'burst ADD')));
        bursts[k]?.[0]?.push(performance.now() - t0);
        t0 = performance.now();
        await Promise.all(burst.map(async (p, i) => must(await op(impl, node, 'DEL', p, i), 'burst DEL')));
        bursts[k]?.[1]?.push(performance.now() - t0);
        const left = nodeLinksLeft();
        if (left.length > 0) throw new Error(`${impl.name}: links left after the burst DEL: ${left.join(' ')}`);
      }
    }
    const endpoints = await ferrydEndpointsLeft(node);
    if (endpoints !== 0) throw new Error(`ferryd still holds ${endpoints} endpoints after the bursts`);
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
  const cpu = (ops: Op[]) => ops.map((o) => o.cpuMs);
  const cpuSum = (ops: Op[]) => ops.reduce((s, o) => s + o.cpuMs, 0);
  const pluginCpu = (x: Figures) => (cpuSum(x.add) + cpuSum(x.check) + cpuSum(x.del)) / PODS;
  const row = (what: string, a: number, b: number, digits = 1) => [what, fmt(a, digits), fmt(b, digits), fmt(a / b, 2)];
  printTable(
    `ferry-cni vs ${REFERENCE.name}, ipMasq false, IPv4-only both (${PODS} pods sequential, alternating; bursts: ${ROUNDS} rounds; medians; ms)`,
    ['measure', 'ferry', 'reference', 'ratio'],
    [
      row('ADD p50', median(wall(f.add)), median(wall(r.add))),
      row('ADD p95', percentile(wall(f.add), 95), percentile(wall(r.add), 95)),
      row('CHECK p50', median(wall(f.check)), median(wall(r.check))),
      row('DEL p50', median(wall(f.del)), median(wall(r.del))),
      row('DEL p95', percentile(wall(f.del), 95), percentile(wall(r.del), 95)),
      row('CPU per ADD (plugin processes, p50)', median(cpu(f.add)), median(cpu(r.add)), 2),
      row('CPU per CHECK (plugin processes, p50)', median(cpu(f.check)), median(cpu(r.check)), 2),
      row('CPU per DEL (plugin processes, p50)', median(cpu(f.del)), median(cpu(r.del)), 2),
      row('node CPU per pod: plugin processes', pluginCpu(f), pluginCpu(r), 2),
      row('node CPU per pod: daemon', f.daemonCpuMs / PODS, r.daemonCpuMs / PODS, 2),
      row(
        'node CPU per pod lifecycle (sum)',
        pluginCpu(f) + f.daemonCpuMs / PODS,
        pluginCpu(r) + r.daemonCpuMs / PODS,
        2,
      ),
      row(`${BURST}-pod burst ADD wall`, f.burstAddMs, r.burstAddMs, 0),
      row(`${BURST}-pod burst DEL wall`, f.burstDelMs, r.burstDelMs, 0),
      row('peak RSS of one exec (MiB)', f.rssMiB, r.rssMiB),
    ],
  );
  if (REFERENCE !== PTP) {
    console.log(
      `\nreference = ${process.env.COMPARE}/ferry-cni against the same ferryd: the daemon row holds ferryd's CPU for both.`,
    );
    return;
  }
  console.log(
    '\nreference = ptp exec (ipMasq false, host-local IPAM with a default route), which execs host-local; ferry = ferry-cni exec' +
      ' + ferryd round trips. Node CPU per pod = (CPU of every ADD, CHECK and DEL exec with the processes it waited for,' +
      ' + ferryd utime+stime over the sequential run) / pods. After every burst DEL no link is left in the node namespace' +
      ' and ferryd holds no endpoint (checked).',
  );
}

const node = benchNode();
if (node) await inside(node);
else process.exit(await runInsideNode(import.meta.path));
