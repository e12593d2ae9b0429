/// <reference types="bun-types" />
/**
 * ferryd's CPU per request in the regime a node sees: requests one at a time, GAP ms apart (20), each on
 * a fresh unix-socket connection (`keepalive: false`, as every shim exec opens its own), so every request
 * finds the process's caches cold. Next to it, in the same run and the same way, the floor: the bare
 * fastify route committing one SQLite row per request (bare-server.mjs, set up as ferryd's database is).
 * Also each server's idle CPU per second, with no request at all.
 *
 * The request types run in blocks of BLOCK requests (allocate, then commit, GET and DELETE of the same
 * containers), each block followed by a block of bare requests: the two alternate through the run.
 * CPU is the process's utime+stime+cutime+cstime from /proc/PID/stat (10 ms ticks, hence totals over
 * blocks, never per request). "net of idle" subtracts the idle rate over the block's wall time.
 *
 *   pnpm --filter @ferry/bench bench:ferryd-sparse       (N=300 per type, GAP=20 ms, BLOCK=50, IDLE=10 s)
 *   COMPARE=/path/to/other/dist/bin/ferryd ...           another build measured in the same alternation
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN } from './lib/node';
import { processCpuMs } from './lib/proc';
import { fmt, percentile, printTable } from './lib/stats';

const N = Number(process.env.N ?? 300);
const GAP = Number(process.env.GAP ?? 20);
const BLOCK = Number(process.env.BLOCK ?? 50);
const IDLE_S = Number(process.env.IDLE ?? 10);
/** Cycles before measuring: the start-up's lazy compilation is not what a node sees for days after. */
const WARMUP = Number(process.env.WARMUP ?? 30);

type Kind = 'allocate' | 'commit' | 'get' | 'release';
const KINDS: Kind[] = ['allocate', 'commit', 'get', 'release'];

async function call(socket: string, method: string, path: string, body?: unknown): Promise<unknown> {
  const r = await fetch(`http://ferryd${path}`, {
    unix: socket,
    method,
    keepalive: false,
    ...(body !== undefined ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } } : {}),
  });
  const text = await r.text();
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${text}`);
  return JSON.parse(text);
}

async function waitFor(check: () => Promise<unknown>, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const ok = await check().then(
      () => true,
      () => false,
    );
    if (ok) return;
    await Bun.sleep(50);
  }
  throw new Error(`${what} never became ready`);
}

const generations = new Map<string, number>();
/** One ferryd request of `kind` for container `id` (allocate first, release last). */
async function ferrydRequest(socket: string, kind: Kind, id: string): Promise<void> {
  const key = `${socket} ${id}`;
  switch (kind) {
    case 'allocate': {
      const a = (await call(socket, 'POST', '/v1/allocations', {
        network: 'ferry',
        containerId: id,
        ifName: 'eth0',
        netns: `/var/run/netns/${id}`,
        pod: { namespace: 'default', name: `pod-${id}`, uid: '6c0b1a3e-3f7e-4d8e-9a51-2b6f0d6f1c11' },
      })) as { generation: number };
      generations.set(key, a.generation);
      return;
    }
    case 'commit':
      await call(socket, 'PUT', `/v1/endpoints/${id}`, {
        network: 'ferry',
        ifName: 'eth0',
        generation: generations.get(key),
        nics: [{ ifName: 'eth0', mac: '0a:58:0a:f4:00:05', containerIfIndex: 2 }],
      });
      return;
    case 'get':
      await call(socket, 'GET', `/v1/endpoints/${id}`);
      return;
    case 'release':
      await call(socket, 'DELETE', `/v1/endpoints/${id}?network=ferry&ifName=eth0`);
      generations.delete(key);
  }
}

/** The floor's request: about the size of an allocation request. */
const bareRequest = (socket: string, i: number) =>
  call(socket, 'POST', '/echo', {
    network: 'ferry',
    containerId: `c${i}`,
    ifName: 'eth0',
    netns: `/var/run/netns/c${i}`,
  });

interface Tally {
  cpuMs: number;
  wallMs: number;
  lat: number[];
}
const tally = (): Tally => ({ cpuMs: 0, wallMs: 0, lat: [] });

/** `n` requests GAP ms apart; adds the process's CPU and the wall time over them to `t`. */
async function block(pid: number, n: number, t: Tally, request: (i: number) => Promise<unknown>): Promise<void> {
  const c0 = processCpuMs(pid);
  const w0 = performance.now();
  for (let i = 0; i < n; i++) {
    await Bun.sleep(GAP);
    const t0 = performance.now();
    await request(i);
    t.lat.push(performance.now() - t0);
  }
  // The last answer is written before the server's work for it ends (its onResponse hooks, say).
  await Bun.sleep(GAP);
  t.cpuMs += processCpuMs(pid) - c0;
  t.wallMs += performance.now() - w0;
}

async function idleCpuPerSecond(pid: number): Promise<number> {
  const c0 = processCpuMs(pid);
  await Bun.sleep(IDLE_S * 1000);
  return (processCpuMs(pid) - c0) / IDLE_S;
}

const dir = mkdtempSync(join(tmpdir(), 'ferry-b-sparse-'));
const bareSock = join(dir, 'bare.sock');

interface Ferryd {
  name: string;
  socket: string;
  proc: ReturnType<typeof Bun.spawn>;
  drained: Promise<void>;
  idle: number;
  tallies: Record<Kind, Tally>;
}

function startFerryd(name: string, launcher: string): Ferryd {
  const home = join(dir, name);
  const socket = join(home, 'ferryd.sock');
  mkdirSync(home);
  writeFileSync(
    join(home, 'ferryd.json'),
    JSON.stringify({
      socket,
      database: join(home, 'ferry.db'),
      deleteQueue: join(home, 'queue'),
      // A node's default level: each write request logs one info line.
      logLevel: process.env.LOG_LEVEL ?? 'info',
      networks: [{ name: 'ferry', ipv4: { subnet: '10.244.0.0/16' } }],
    }),
  );
  const proc = Bun.spawn({
    cmd: [launcher, '--config', join(home, 'ferryd.json')],
    // A pipe someone reads, as under a container runtime (writes to /dev/null would cost less than that).
    stdout: 'pipe',
    stderr: 'inherit',
  });
  const drained = (async () => {
    for await (const _ of proc.stdout as ReadableStream<Uint8Array>) {
      // The log lines are not looked at.
    }
  })();
  const tallies = Object.fromEntries(KINDS.map((k) => [k, tally()])) as Record<Kind, Tally>;
  return { name, socket, proc, drained, idle: 0, tallies };
}

const ferryds = [
  startFerryd('ferryd', join(BIN, 'ferryd')),
  ...(process.env.COMPARE ? [startFerryd('compare', process.env.COMPARE)] : []),
];
const bare = Bun.spawn({
  cmd: ['node', join(import.meta.dir, 'bare-server.mjs'), bareSock, join(dir, 'bare.db')],
  stdout: 'ignore',
  stderr: 'inherit',
});
try {
  for (const f of ferryds) await waitFor(() => call(f.socket, 'GET', '/readyz'), f.name);
  await waitFor(() => bareRequest(bareSock, 0), 'the bare server');
  for (let i = 0; i < WARMUP; i++) {
    for (const f of ferryds) for (const kind of KINDS) await ferrydRequest(f.socket, kind, `warm${i}`);
    await bareRequest(bareSock, i);
  }
  // Timers that start with the first requests (a reconcile after a release, say) settle first.
  await Bun.sleep(1000);
  for (const f of ferryds) f.idle = await idleCpuPerSecond(f.proc.pid);
  const idleBare = await idleCpuPerSecond(bare.pid);

  const bareT = tally();
  for (let done = 0; done < N; done += BLOCK) {
    const ids = Array.from({ length: Math.min(BLOCK, N - done) }, (_, i) => `sparse${done + i}`);
    for (const kind of KINDS) {
      for (const f of ferryds) {
        await block(f.proc.pid, ids.length, f.tallies[kind], (i) => ferrydRequest(f.socket, kind, ids[i] as string));
      }
      await block(bare.pid, ids.length, bareT, (i) => bareRequest(bareSock, done + i));
    }
  }

  const net = (t: Tally, idle: number) => (t.cpuMs - (idle * t.wallMs) / 1000) / t.lat.length;
  const floorNet = net(bareT, idleBare);
  const row = (name: string, t: Tally, idle: number) => [
    name,
    fmt(t.cpuMs / t.lat.length, 2),
    fmt(net(t, idle), 2),
    fmt(net(t, idle) / floorNet, 2),
    fmt(percentile(t.lat, 50), 2),
    fmt(percentile(t.lat, 95), 2),
  ];
  printTable(
    `ferryd CPU per request, sparse: one request every ${GAP} ms, a fresh connection each (${N} per type, blocks of ${BLOCK}, alternating with the floor; ms)`,
    ['request', 'CPU/req', 'net of idle', '÷ floor', 'lat p50', 'lat p95'],
    [
      ...ferryds.flatMap((f) => KINDS.map((k) => row(`${f.name} ${k}`, f.tallies[k], f.idle))),
      row('floor: bare route + 1 SQLite row', bareT, idleBare),
    ],
  );
  printTable(
    `idle CPU, no request at all (${IDLE_S} s each, after ${WARMUP} warm-up cycles)`,
    ['process', 'ms CPU per s'],
    [...ferryds.map((f) => [f.name, fmt(f.idle, 2)]), ['floor', fmt(idleBare, 2)]],
  );
  console.log(
    '\nCPU/req = utime+stime+cutime+cstime over the blocks ÷ requests (it includes the idle CPU of the gaps);' +
      ' net of idle subtracts the idle rate over the same wall time; ÷ floor compares the nets. ferryd logs at ' +
      `${process.env.LOG_LEVEL ?? 'info'} (LOG_LEVEL=...)${process.env.COMPARE ? `; compare = ${process.env.COMPARE}` : ''}.`,
  );
} finally {
  for (const f of ferryds) f.proc.kill('SIGTERM');
  bare.kill('SIGTERM');
  await Promise.all([...ferryds.flatMap((f) => [f.proc.exited, f.drained]), bare.exited]);
  rmSync(dir, { recursive: true, force: true });
}
