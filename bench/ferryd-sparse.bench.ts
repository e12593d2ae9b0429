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
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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
  switch (kind) {
    case 'allocate': {
      const a = (await call(socket, 'POST', '/v1/allocations', {
        network: 'ferry',
        containerId: id,
        ifName: 'eth0',
        netns: `/var/run/netns/${id}`,
        pod: { namespace: 'default', name: `pod-${id}`, uid: '6c0b1a3e-3f7e-4d8e-9a51-2b6f0d6f1c11' },
      })) as { generation: number };
      generations.set(id, a.generation);
      return;
    }
    case 'commit':
      await call(socket, 'PUT', `/v1/endpoints/${id}`, {
        network: 'ferry',
        ifName: 'eth0',
        generation: generations.get(id),
        nics: [{ ifName: 'eth0', mac: '0a:58:0a:f4:00:05', containerIfIndex: 2 }],
      });
      return;
    case 'get':
      await call(socket, 'GET', `/v1/endpoints/${id}`);
      return;
    case 'release':
      await call(socket, 'DELETE', `/v1/endpoints/${id}?network=ferry&ifName=eth0`);
      generations.delete(id);
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
const ferrySock = join(dir, 'ferryd.sock');
const bareSock = join(dir, 'bare.sock');
writeFileSync(
  join(dir, 'ferryd.json'),
  JSON.stringify({
    socket: ferrySock,
    database: join(dir, 'ferry.db'),
    deleteQueue: join(dir, 'queue'),
    // A node's default level: each request writes one info line (to /dev/null here).
    logLevel: process.env.LOG_LEVEL ?? 'info',
    networks: [{ name: 'ferry', ipv4: { subnet: '10.244.0.0/16' } }],
  }),
);
const ferryd = Bun.spawn({
  cmd: [join(BIN, 'ferryd'), '--config', join(dir, 'ferryd.json')],
  stdout: 'ignore',
  stderr: 'inherit',
});
const bare = Bun.spawn({
  cmd: ['node', join(import.meta.dir, 'bare-server.mjs'), bareSock, join(dir, 'bare.db')],
  stdout: 'ignore',
  stderr: 'inherit',
});
try {
  await waitFor(() => call(ferrySock, 'GET', '/readyz'), 'ferryd');
  await waitFor(() => bareRequest(bareSock, 0), 'the bare server');
  for (let i = 0; i < WARMUP; i++) {
    for (const kind of KINDS) await ferrydRequest(ferrySock, kind, `warm${i}`);
    await bareRequest(bareSock, i);
  }
  // Timers that start with the first requests (a reconcile after a release, say) settle first.
  await Bun.sleep(1000);
  const idleFerryd = await idleCpuPerSecond(ferryd.pid);
  const idleBare = await idleCpuPerSecond(bare.pid);

  const ferrydT = Object.fromEntries(KINDS.map((k) => [k, tally()])) as Record<Kind, Tally>;
  const bareT = tally();
  for (let done = 0; done < N; done += BLOCK) {
    const ids = Array.from({ length: Math.min(BLOCK, N - done) }, (_, i) => `sparse${done + i}`);
    for (const kind of KINDS) {
      await block(ferryd.pid, ids.length, ferrydT[kind], (i) => ferrydRequest(ferrySock, kind, ids[i] as string));
      await block(bare.pid, ids.length, bareT, (i) => bareRequest(bareSock, done + i));
    }
  }

  const row = (name: string, t: Tally, idle: number, floor?: number) => {
    const perReq = t.cpuMs / t.lat.length;
    const net = (t.cpuMs - (idle * t.wallMs) / 1000) / t.lat.length;
    return [
      name,
      fmt(perReq, 2),
      fmt(net, 2),
      floor === undefined ? '-' : fmt(net / floor, 2),
      fmt(percentile(t.lat, 50), 2),
      fmt(percentile(t.lat, 95), 2),
    ];
  };
  const floorNet = (bareT.cpuMs - (idleBare * bareT.wallMs) / 1000) / bareT.lat.length;
  printTable(
    `ferryd CPU per request, sparse: one request every ${GAP} ms, a fresh connection each (${N} per type, blocks of ${BLOCK}, alternating with the floor; ms)`,
    ['request', 'CPU/req', 'net of idle', '÷ floor', 'lat p50', 'lat p95'],
    [
      ...KINDS.map((k) => row(`ferryd ${k}`, ferrydT[k], idleFerryd, floorNet)),
      row('floor: bare route + 1 SQLite row', bareT, idleBare),
    ],
  );
  printTable(
    `idle CPU, no request at all (${IDLE_S} s each, after ${WARMUP} warm-up cycles)`,
    ['process', 'ms CPU per s'],
    [
      ['ferryd', fmt(idleFerryd, 2)],
      ['floor', fmt(idleBare, 2)],
    ],
  );
  console.log(
    '\nCPU/req = utime+stime+cutime+cstime over the blocks ÷ requests (it includes the idle CPU of the gaps);' +
      ' net of idle subtracts the idle rate over the same wall time. ferryd logs at ' +
      `${process.env.LOG_LEVEL ?? 'info'} (LOG_LEVEL=...).`,
  );
} finally {
  ferryd.kill('SIGTERM');
  bare.kill('SIGTERM');
  await Promise.all([ferryd.exited, bare.exited]);
  rmSync(dir, { recursive: true, force: true });
}
