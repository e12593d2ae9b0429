/// <reference types="bun-types" />
/**
 * The benchmark's node: a network namespace standing in for the host, ferryd running inside it, and
 * the harness re-executed inside it so every plugin run is a plain fork+exec, as under a runtime.
 * Everything is removed on exit.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sh } from './proc';

export const ROOT = join(import.meta.dir, '..', '..');
export const BIN = join(ROOT, 'dist', 'bin');
export const REF = '/usr/lib/cni';

export interface BenchFerryd {
  dir: string;
  socket: string;
  /** ferryd's delete queue (the shim's conflist must name it: the default is the machine's own). */
  deleteQueue: string;
  /** ferryd's process id (nsenter and env exec it in place): for its CPU from /proc, or to kill it. */
  ferrydPid: number;
}

export interface BenchNode extends BenchFerryd {
  netns: string;
  /**
   * A second ferry build measured in the same run (COMPARE=<checkout with a built dist/>): its own ferryd,
   * state and pool (10.246.0.0/16), so the two never share an address or a host route.
   */
  compare?: BenchFerryd & { bin: string };
}

/** COMPARE names another checkout whose dist/bin is measured beside this one's. */
const COMPARE_BIN = process.env.COMPARE ? join(process.env.COMPARE, 'dist', 'bin') : undefined;

/** In the outer process: set up, re-run this script inside the node netns, tear down. Returns the exit code. */
export async function runInsideNode(script: string, ferrydConfig: Record<string, unknown> = {}): Promise<number> {
  const id = Math.random().toString(16).slice(2, 10);
  const name = `ferry-b-node-${id}`;
  const dir = `/tmp/ferry-b-${id}`;
  mkdirSync(dir, { recursive: true });
  sh(['ip', 'netns', 'add', name]);
  const netns = `/var/run/netns/${name}`;
  const ferryds: ReturnType<typeof Bun.spawn>[] = [];
  try {
    sh(['nsenter', `--net=${netns}`, 'ip', 'link', 'set', 'lo', 'up']);
    sh(['nsenter', `--net=${netns}`, 'ip', 'addr', 'add', '192.0.2.1/32', 'dev', 'lo']);
    // Two ferryds on one node each adopt the other's pods (a marked host veth its database lacks is the
    // node's word) in their reconcile passes: with a second build there, the one pass is the one at start.
    const config = COMPARE_BIN ? { reconcile: { intervalSec: 3600 }, ...ferrydConfig } : ferrydConfig;
    const main = await startFerryd(BIN, dir, netns, '10.244.0.0/16', config, ferryds);
    const compare = COMPARE_BIN
      ? {
          bin: COMPARE_BIN,
          ...(await startFerryd(COMPARE_BIN, join(dir, 'compare'), netns, '10.246.0.0/16', config, ferryds)),
        }
      : undefined;
    const child = Bun.spawn({
      cmd: ['nsenter', `--net=${netns}`, process.execPath, 'run', script],
      env: {
        ...process.env,
        FERRY_BENCH_NODE: JSON.stringify({ ...main, netns, ...(compare ? { compare } : {}) } satisfies BenchNode),
      },
      stdout: 'inherit',
      stderr: 'inherit',
    });
    return await child.exited;
  } finally {
    for (const ferryd of ferryds) ferryd.kill('SIGTERM');
    await Promise.all(ferryds.map((f) => f.exited));
    for (const ns of sh(['ip', 'netns', 'list']).split('\n')) {
      const n = ns.split(' ')[0] ?? '';
      if (n.startsWith(`ferry-b-`) && n.includes(id)) sh(['ip', 'netns', 'del', n]);
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Starts the ferryd of `bin` in the node namespace, its state under `dir`, and waits until it is ready. */
async function startFerryd(
  bin: string,
  dir: string,
  netns: string,
  subnet: string,
  ferrydConfig: Record<string, unknown>,
  started: ReturnType<typeof Bun.spawn>[],
): Promise<BenchFerryd> {
  mkdirSync(dir, { recursive: true });
  const socket = join(dir, 'run', 'ferryd.sock');
  const deleteQueue = join(dir, 'lib', 'queue');
  const config = {
    socket,
    database: join(dir, 'lib', 'ferry.db'),
    deleteQueue,
    logLevel: 'warn',
    networks: [{ name: 'ferry', ipv4: { subnet } }],
    ...ferrydConfig,
  };
  writeFileSync(join(dir, 'ferryd.json'), JSON.stringify(config));
  const ferryd = Bun.spawn({
    cmd: ['nsenter', `--net=${netns}`, join(bin, 'ferryd'), '--config', join(dir, 'ferryd.json')],
    stdout: Bun.file(join(dir, 'ferryd.log')),
    stderr: Bun.file(join(dir, 'ferryd.log')),
  });
  started.push(ferryd);
  for (let i = 0; i < 200; i++) {
    const r = await fetch('http://ferryd/readyz', { unix: socket }).catch(() => undefined);
    if (r?.status === 200) break;
    await Bun.sleep(50);
  }
  return { dir, socket, deleteQueue, ferrydPid: ferryd.pid };
}

/**
 * ferry-cni's network config for `ferryd` (stdin of a run), with `extra` keys: its socket, its delete queue
 * (next to which the shim writes its commit journal, as a node's conflist and ferryd's config agree) and a
 * log file in its dir.
 */
export function ferryConf(ferryd: BenchFerryd, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    cniVersion: '1.0.0',
    name: 'ferry',
    type: 'ferry-cni',
    daemonSocket: ferryd.socket,
    deleteQueue: ferryd.deleteQueue,
    logFile: join(ferryd.dir, 'cni.log'),
    ...extra,
  });
}

/** In the inner process: where the node's pieces are, or undefined when not yet inside. */
export function benchNode(): BenchNode | undefined {
  const raw = process.env.FERRY_BENCH_NODE;
  return raw ? (JSON.parse(raw) as BenchNode) : undefined;
}

/** Pod namespaces named after the node's id so the outer process removes them whatever happens. */
export function makePods(node: BenchNode, n: number, tag: string): string[] {
  const id = node.dir.split('-').at(-1);
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const name = `ferry-b-${tag}${i}-${id}`;
    sh(['ip', 'netns', 'add', name]);
    out.push(`/var/run/netns/${name}`);
  }
  return out;
}

export function dropPods(paths: readonly string[]): void {
  for (const p of paths) sh(['ip', 'netns', 'del', p.split('/').at(-1) ?? '']);
}
