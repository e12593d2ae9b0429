import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, onTestFinished, test } from 'vitest';
import { tryLock } from './flock';

function lockFile(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-t-flock-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'lock');
}

// Each openSync is its own open file description: to flock(2), as good as another process.
test('an exclusive lock excludes every other holder until its descriptor is closed', () => {
  const path = lockFile();
  const a = openSync(path, 'a+');
  const b = openSync(path, 'a+');
  onTestFinished(() => closeSync(b));
  expect(tryLock(a, 'exclusive')).toBe(true);
  expect(tryLock(b, 'shared')).toBe(false);
  expect(tryLock(b, 'exclusive')).toBe(false);
  closeSync(a);
  expect(tryLock(b, 'exclusive')).toBe(true);
});

test('shared locks coexist and keep an exclusive one out', () => {
  const path = lockFile();
  const fds = [openSync(path, 'a+'), openSync(path, 'a+'), openSync(path, 'a+')];
  onTestFinished(() => {
    for (const fd of fds) closeSync(fd);
  });
  expect(tryLock(fds[0] as number, 'shared')).toBe(true);
  expect(tryLock(fds[1] as number, 'shared')).toBe(true);
  expect(tryLock(fds[2] as number, 'exclusive')).toBe(false);
});

test('a descriptor that is not open is an error, not a lock held elsewhere', () => {
  // Far above any descriptor this process has open (a closed one could be reused at once).
  expect(() => tryLock(99_999, 'exclusive')).toThrow(/flock: .*EBADF/);
});
