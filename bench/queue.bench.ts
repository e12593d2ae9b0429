/// <reference types="bun-types" />
/**
 * Draining the delete queue: 10,000 endpoints exist, ferryd is stopped, 10,000 entries are written the
 * way the shim writes them, ferryd starts. Start-up drains before it reports ready, so the time to
 * ready minus an empty start-up is the drain (ferryd also logs it). Goal: ≤ 10 s on this machine.
 *
 *   pnpm --filter @ferry/bench bench:queue       (ENTRIES=10000 by default)
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN } from './lib/node';
import { fmt, printTable } from './lib/stats';

const ENTRIES = Number(process.env.ENTRIES ?? 10_000);
const dir = mkdtempSync(join(tmpdir(), 'ferry-b-queue-'));
const socket = join(dir, 'ferryd.sock');
const queue = join(dir, 'queue');
const configPath = join(dir, 'ferryd.json');
writeFileSync(
  configPath,
  JSON.stringify({
    socket,
    database: join(dir, 'ferry.db'),
    deleteQueue: queue,
    logLevel: 'info',
    networks: [{ name: 'ferry', ipv4: { subnet: '10.0.0.0/16' }, ipv6: { subnet: 'fd00::/64' } }],
  }),
);

async function startFerryd(): Promise<{ proc: ReturnType<typeof Bun.spawn>; readyMs: number }> {
  const t0 = performance.now();
  const proc = Bun.spawn({
    cmd: [join(BIN, 'ferryd'), '--config', configPath],
    stdout: Bun.file(join(dir, 'ferryd.log')),
    stderr: 'inherit',
  });
  for (;;) {
    const r = await fetch('http://x/readyz', { unix: socket }).catch(() => undefined);
    if (r?.status === 200) return { proc, readyMs: performance.now() - t0 };
    await Bun.sleep(5);
  }
}

async function call(method: string, path: string, body?: unknown): Promise<unknown> {
  const r = await fetch(`http://x${path}`, {
    unix: socket,
    method,
    ...(body ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } } : {}),
  });
  return r.json();
}

try {
  const empty = await startFerryd();
  const ids = Array.from({ length: ENTRIES }, (_, i) => `bench-${i}`);
  for (let i = 0; i < ids.length; i += 64) {
    await Promise.all(
      ids
        .slice(i, i + 64)
        .map((id) =>
          call('POST', '/v1/allocations', { network: 'ferry', containerId: id, ifName: 'eth0', netns: '/x' }),
        ),
    );
  }
  empty.proc.kill('SIGTERM');
  await empty.proc.exited;

  const queuedAt = new Date().toISOString();
  for (const id of ids) {
    const name = `${createHash('sha256').update(`ferry\n${id}\neth0`).digest('hex').slice(0, 32)}.json`;
    writeFileSync(
      join(queue, name),
      JSON.stringify({ version: 1, network: 'ferry', containerId: id, ifName: 'eth0', netns: '', queuedAt }),
    );
  }
  const full = await startFerryd();
  const left = readdirSync(queue).filter((f) => f.endsWith('.json')).length;
  const eps = ((await call('GET', '/v1/operator/endpoints')) as { endpoints: unknown[] }).endpoints.length;
  full.proc.kill('SIGTERM');
  await full.proc.exited;
  const logged = (await Bun.file(join(dir, 'ferryd.log')).text())
    .split('\n')
    .find((l) => l.includes('delete queue drained'));
  const tookMs = logged ? (JSON.parse(logged) as { tookMs: number }).tookMs : Number.NaN;
  printTable(
    `delete queue drain (${ENTRIES} entries, each releasing a live endpoint)`,
    ['measure', 'value'],
    [
      ['drain, as ferryd logs it (ms)', fmt(tookMs, 0)],
      ['start-up to ready, full queue (ms)', fmt(full.readyMs, 0)],
      ['start-up to ready, empty queue (ms)', fmt(empty.readyMs, 0)],
      ['entries left after start-up', String(left)],
      ['endpoints left', String(eps)],
      ['goal', '≤ 10000 ms'],
    ],
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
