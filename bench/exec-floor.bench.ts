/// <reference types="bun-types" />
/**
 * What an exec costs before any work: the reference plugins' VERSION, an empty program compiled exactly as
 * ferry-cni is, and ferry-cni's VERSION (its modules loaded, libc bound, stdin read, the answer written),
 * alternating one by one. A pod's lifecycle is three ferry-cni execs against six Go execs (ptp and
 * host-local for ADD, CHECK and DEL), so these floors set how much of bench:shim's ratios is start-up.
 * Needs no namespace and no ferryd.
 *
 *   pnpm --filter @ferry/bench bench:floor        RUNS=300 by default
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compileShim } from '../scripts/compile-shim.mjs';
import { BIN, REF } from './lib/node';
import { exec } from './lib/proc';
import { fmt, median, printTable } from './lib/stats';

const RUNS = Number(process.env.RUNS ?? 300);

const dir = mkdtempSync(join(tmpdir(), 'ferry-b-floor-'));
try {
  const empty = join(dir, 'empty');
  compileShim('bench/lib/empty-program.ts', empty);
  const subjects: [string, string][] = [
    ['ptp VERSION', join(REF, 'ptp')],
    ['host-local VERSION', join(REF, 'host-local')],
    ['empty Bun program (compiled as ferry-cni)', empty],
    ['ferry-cni VERSION', join(BIN, 'ferry-cni')],
  ];
  const env = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', CNI_COMMAND: 'VERSION' };
  const stdin = JSON.stringify({ cniVersion: '1.0.0' });
  const cpu = subjects.map((): number[] => []);
  const wall = subjects.map((): number[] => []);
  for (let i = 0; i < RUNS + 10; i++) {
    for (const [k, [name, bin]] of subjects.entries()) {
      const op = await exec([bin], env, stdin);
      if (op.exitCode !== 0) throw new Error(`${name}: exit ${op.exitCode}`);
      // The first runs page the binaries in.
      if (i < 10) continue;
      cpu[k]?.push(op.cpuMs);
      wall[k]?.push(op.wallMs);
    }
  }
  const cpuOf = (k: number) => median(cpu[k] ?? []);
  printTable(
    `one exec before any work (${RUNS} runs each, alternating; medians; ms)`,
    ['exec', 'CPU', 'wall'],
    subjects.map(([name], k) => [name, fmt(cpuOf(k), 2), fmt(median(wall[k] ?? []), 2)]),
  );
  const goPair = cpuOf(0) + cpuOf(1);
  printTable(
    'per pod lifecycle (ADD + CHECK + DEL), from the medians above (ms of CPU)',
    ['floor', 'CPU'],
    [
      ['reference: 3 × (ptp + host-local)', fmt(3 * goPair, 2)],
      ['Ferry: 3 × the empty Bun program', fmt(3 * cpuOf(2), 2)],
      ["Ferry: 3 × ferry-cni's own start (VERSION − empty)", fmt(3 * (cpuOf(3) - cpuOf(2)), 2)],
    ],
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
