// How ferry-cni is compiled into one executable (bun build --compile), for `pnpm build` and for
// bench/exec-floor.bench.ts, which compiles an empty program the same way to measure what Bun alone costs.
import { execFileSync } from 'node:child_process';
import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bun = join(root, 'node_modules', '.bin', 'bun');

/** Compiles `entry` (relative to the repository root) to the executable `to`, written as nodes get it. */
export function compileShim(entry, to) {
  const compiled = `${to}.compiled`;
  execFileSync(
    bun,
    [
      'build',
      entry,
      '--compile',
      // Each dynamic import becomes its own chunk inside the executable, loaded only when that command
      // needs it: a run no longer deserialises the whole bundle (zod, every command) at start-up.
      '--splitting',
      '--minify',
      '--bytecode',
      '--format=esm',
      // The runtime's working directory is not ours: never read a .env or bunfig.toml from it.
      '--no-compile-autoload-dotenv',
      '--no-compile-autoload-bunfig',
      // A shim lives for tens of milliseconds: JIT tiers cost CPU that never pays back. Ten times the
      // tier-up thresholds cut CPU per ADD by a fifth; a thousand times (the JIT practically never runs)
      // another 0.4–0.9 ms (bench/shim-phases.bench.ts "CPU of the exec", four alternating runs).
      '--compile-jit-policy=1000',
      '--outfile',
      compiled,
    ],
    { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] },
  );
  writeExecutable(compiled, to);
}

/**
 * Moves a compiled executable into place written as `ferryctl install` writes it, in 16 KiB writes
 * (EXECUTABLE_WRITE_BYTES, packages/files/src/atomic.ts): the page cache keeps it in folios no larger, and
 * the tests and benchmarks exec it as nodes do, not in the large folios of the compiler's big writes, which
 * an exec maps whole (~6 MiB more RSS per ferry-cni run).
 */
function writeExecutable(from, to) {
  const bytes = readFileSync(from);
  rmSync(to, { force: true });
  const fd = openSync(to, 'wx', 0o755);
  try {
    for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at, Math.min(16 * 1024, bytes.length - at));
  } finally {
    closeSync(fd);
  }
  rmSync(from);
}
