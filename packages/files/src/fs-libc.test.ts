import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { runScenario } from './testing/fs-scenario';

const bun = join(import.meta.dirname, '../../../node_modules/.bin/bun');
const dirs: string[] = [];
const freshDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'ferry-fs-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

// The libc implementation is what the shipped binary runs; Node's is the reference it must match, errors
// included, on the same calls in a fresh directory each.
it('libc SyncFs under Bun gives what node:fs gives, values and errors', () => {
  const expected = runScenario(freshDir());
  const libcDir = freshDir();
  const got = JSON.parse(
    execFileSync(bun, [join(import.meta.dirname, 'testing/fs-scenario.ts'), libcDir], { encoding: 'utf8' }),
  );
  expect(got).toEqual(expected);
  // Not vacuous: the scenario met both successes and errors.
  expect(expected.write).toMatchObject({ ok: { n: 12, size: 12, file: true, sameFile: true } });
  expect(expected.unlinkMissing).toMatchObject({ code: 'ENOENT', syscall: 'unlink' });
  expect(expected.noFollow).toMatchObject({ code: 'ELOOP' });
  expect(statSync(join(libcDir, 'a/b/c')).mode & 0o777).toBe(0o750 & ~process.umask());
});
