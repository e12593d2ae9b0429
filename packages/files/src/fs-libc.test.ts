import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
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

// node:fs's recursive mkdir succeeds when another process makes a level first; shims making the delete
// queue or the log directory at once rely on it.
it('libc recursive mkdir under Bun tolerates other processes making the same directories', async () => {
  const dir = freshDir();
  const runs = await Promise.all(
    Array.from({ length: 4 }, () =>
      promisify(execFile)(bun, [join(import.meta.dirname, 'testing/mkdir-race.ts'), dir, '300', '4'], {
        encoding: 'utf8',
      }),
    ),
  );
  const results = runs.map((r) => JSON.parse(r.stdout) as { failures: number; first: string });
  expect(results).toEqual(Array(4).fill({ failures: 0, first: '' }));
  expect(statSync(join(dir, 'r299/p/q')).isDirectory()).toBe(true);
});
