/// <reference types="bun-types" />
/**
 * ferryd's API throughput over its unix socket: allocate → commit → release cycles at 1, 8 and 32
 * concurrent clients, next to a bare fastify route (bare-server.mjs) on the same kind of socket,
 * measured the same way in the same run; and next to the same route committing one row to SQLite per
 * request (set up as ferryd's database is), the floor for anything that stores each request before it
 * answers. Each client keeps one connection (fetch keep-alive).
 *
 *   pnpm --filter @ferry/bench bench:ferryd       (SECONDS=5 per level by default)
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN } from './lib/node';
import { fmt, percentile, printTable } from './lib/stats';

const SECONDS = Number(process.env.SECONDS ?? 5);
const LEVELS = [1, 8, 32];

async function waitFor(socket: string, path: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const r = await fetch(`http://x${path}`, {
      unix: socket,
      method: path === '/echo' ? 'POST' : 'GET',
      body: path === '/echo' ? '{}' : undefined,
      headers: { 'content-type': 'application/json' },
    }).catch(() => undefined);
    if (r?.ok) return;
    await Bun.sleep(50);
  }
  throw new Error(`${socket} never became ready`);
}

async function post(socket: string, method: string, path: string, body?: unknown): Promise<unknown> {
  const r = await fetch(`http://x${path}`, {
    unix: socket,
    method,
    ...(body !== undefined ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } } : {}),
  });
  const json = await r.json();
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(json)}`);
  return json;
}

/** Runs `op` from `clients` loops for SECONDS; returns ops/s and per-op latencies (ms). */
async function drive(
  clients: number,
  op: (client: number, i: number) => Promise<void>,
): Promise<{ rate: number; lat: number[] }> {
  const lat: number[] = [];
  const until = performance.now() + SECONDS * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      for (let i = 0; performance.now() < until; i++) {
        const t0 = performance.now();
        await op(c, i);
        lat.push(performance.now() - t0);
        done++;
      }
    }),
  );
  return { rate: done / SECONDS, lat };
}

const dir = mkdtempSync(join(tmpdir(), 'ferry-b-api-'));
const ferrySock = join(dir, 'ferryd.sock');
const bareSock = join(dir, 'bare.sock');
const durableSock = join(dir, 'durable.sock');
writeFileSync(
  join(dir, 'ferryd.json'),
  JSON.stringify({
    socket: ferrySock,
    database: join(dir, 'ferry.db'),
    deleteQueue: join(dir, 'queue'),
    logLevel: 'warn',
    cooldownSec: 0,
    networks: [{ name: 'ferry', ipv4: { subnet: '10.0.0.0/16' }, ipv6: { subnet: 'fd00::/64' } }],
  }),
);
const ferryd = Bun.spawn({
  cmd: [join(BIN, 'ferryd'), '--config', join(dir, 'ferryd.json')],
  stdout: 'ignore',
  stderr: 'inherit',
});
const baseline = (args: string[]) =>
  Bun.spawn({ cmd: ['node', join(import.meta.dir, 'bare-server.mjs'), ...args], stdout: 'ignore', stderr: 'inherit' });
const bare = baseline([bareSock]);
const durable = baseline([durableSock, join(dir, 'durable.db')]);
try {
  await waitFor(ferrySock, '/readyz');
  await waitFor(bareSock, '/echo');
  await waitFor(durableSock, '/echo');
  const rows: string[][] = [];
  for (const clients of LEVELS) {
    const echo = (socket: string) => async () => {
      await post(socket, 'POST', '/echo', {
        network: 'ferry',
        containerId: 'x',
        ifName: 'eth0',
        netns: '/var/run/netns/x',
      });
    };
    const bareRun = await drive(clients, echo(bareSock));
    const durableRun = await drive(clients, echo(durableSock));
    const ferryRun = await drive(clients, async (c, i) => {
      const containerId = `c${clients}-${c}-${i}`;
      const a = (await post(ferrySock, 'POST', '/v1/allocations', {
        network: 'ferry',
        containerId,
        ifName: 'eth0',
        netns: '/var/run/netns/x',
      })) as { generation: number };
      await post(ferrySock, 'PUT', `/v1/endpoints/${containerId}`, {
        network: 'ferry',
        ifName: 'eth0',
        generation: a.generation,
        nics: [{ ifName: 'eth0', mac: '0a:58:00:00:00:01', containerIfIndex: 2 }],
      });
      await post(ferrySock, 'DELETE', `/v1/endpoints/${containerId}?network=ferry&ifName=eth0`);
    });
    const ferryReqs = ferryRun.rate * 3;
    rows.push([
      String(clients),
      fmt(ferryRun.rate, 0),
      fmt(ferryReqs, 0),
      fmt(bareRun.rate, 0),
      fmt(ferryReqs / bareRun.rate, 2),
      fmt(durableRun.rate, 0),
      fmt(durableRun.rate / bareRun.rate, 2),
      fmt(percentile(ferryRun.lat, 50), 2),
      fmt(percentile(ferryRun.lat, 99), 2),
      fmt(percentile(bareRun.lat, 50), 2),
      fmt(percentile(bareRun.lat, 99), 2),
    ]);
  }
  printTable(
    `ferryd API over its unix socket vs a bare fastify route (${SECONDS} s per level)`,
    [
      'clients',
      'cycles/s',
      'ferry req/s',
      'bare req/s',
      'ratio',
      '1-row req/s',
      'ratio',
      'cycle p50',
      'cycle p99',
      'bare p50',
      'bare p99',
    ],
    rows,
  );
  console.log(
    '\ncycle = allocate + commit + release (3 requests; concurrent ones share a transaction). ratio = ferry req/s ÷ bare' +
      ' req/s; 1-row = the bare route committing one row per request, its ratio ÷ bare as well.',
  );
} finally {
  ferryd.kill('SIGTERM');
  bare.kill('SIGTERM');
  durable.kill('SIGTERM');
  await Promise.all([ferryd.exited, bare.exited, durable.exited]);
  rmSync(dir, { recursive: true, force: true });
}
