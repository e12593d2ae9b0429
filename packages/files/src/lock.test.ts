import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, onTestFinished, test } from 'vitest';
import { lockFile, tryLockFile } from './lock';
import tryFlock from './lock-flock1';

const bun = join(import.meta.dirname, '../../../node_modules/.bin/bun');

function lockPath(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-t-flock-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'lock');
}

// Each take opens the file anew: its own open file description, to flock(2) as good as another process.
test('an exclusive lock excludes every other holder until it is released', () => {
  const path = lockPath();
  const a = tryLockFile(path, 'exclusive');
  expect(a).toBeDefined();
  expect(statSync(path).mode & 0o777).toBe(0o600);
  expect(tryLockFile(path, 'shared')).toBeUndefined();
  expect(tryLockFile(path, 'exclusive')).toBeUndefined();
  a?.release();
  a?.release();
  const b = tryLockFile(path, 'exclusive');
  expect(b).toBeDefined();
  b?.release();
});

test('shared locks coexist and keep an exclusive one out', () => {
  const path = lockPath();
  const held = [tryLockFile(path, 'shared'), tryLockFile(path, 'shared')];
  onTestFinished(() => {
    for (const l of held) l?.release();
  });
  expect(held.every((l) => l !== undefined)).toBe(true);
  expect(tryLockFile(path, 'exclusive')).toBeUndefined();
});

test('a wait gets the lock once its holder lets go, or gives up at its timeout', async () => {
  const path = lockPath();
  const first = tryLockFile(path, 'exclusive');
  expect(await lockFile(path, 'shared', 50)).toBeUndefined();
  const waiting = lockFile(path, 'shared', 5000);
  setTimeout(() => first?.release(), 50);
  const got = await waiting;
  expect(got).toBeDefined();
  got?.release();
});

test('the descriptor is the lock file, open for writing (ferryd writes its PID there)', async () => {
  const path = lockPath();
  const lock = await lockFile(path, 'exclusive', 0);
  onTestFinished(() => lock?.release());
  writeSync(lock?.fd ?? -1, '42\n');
  expect(readFileSync(path, 'utf8')).toBe('42\n');
});

test('flock(1) on a descriptor that is not open is an error, not a lock held elsewhere', () => {
  // Far above any descriptor this process has open (a closed one could be reused at once).
  expect(() => tryFlock(99_999, 'exclusive')).toThrow(/flock: .*EBADF/);
});

/** A Bun process holding (or failing to take) the lock through libc, as the shipped shim does. */
async function holdUnderBun(path: string, mode: 'shared' | 'exclusive'): Promise<string> {
  const child = spawn(bun, [join(import.meta.dirname, 'testing/hold-lock.ts'), path, mode], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  onTestFinished(async () => {
    child.stdin.end();
    if (child.exitCode === null) await once(child, 'exit');
  });
  return await new Promise<string>((resolve) => child.stdout.once('data', (d: Buffer) => resolve(d.toString().trim())));
}

// The shim (libc, Bun) and ferryd (flock(1), Node) take the same lock: each must see the other's.
test('a lock taken through libc under Bun and one taken through flock(1) exclude each other', async () => {
  const path = lockPath();
  expect(await holdUnderBun(path, 'shared')).toBe('held');
  expect(tryLockFile(path, 'exclusive')).toBeUndefined();
  const shared = tryLockFile(path, 'shared');
  expect(shared).toBeDefined();
  shared?.release();

  const other = lockPath();
  const mine = tryLockFile(other, 'exclusive');
  onTestFinished(() => mine?.release());
  expect(await holdUnderBun(other, 'shared')).toBe('busy');
});
