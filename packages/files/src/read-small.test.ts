import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, onTestFinished, test } from 'vitest';
import { readSmallFile } from './read-small';

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-t-read-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('reads a regular file within the limit', () => {
  const dir = tempDir();
  writeFileSync(join(dir, 'f'), 'héllo');
  expect(readSmallFile(join(dir, 'f'), 6)).toBe('héllo');
});

test('refuses what is not a small regular file, naming why, without blocking', () => {
  const dir = tempDir();
  writeFileSync(join(dir, 'big'), 'x'.repeat(11));
  writeFileSync(join(dir, 'target'), 'secret');
  symlinkSync(join(dir, 'target'), join(dir, 'link'));
  mkdirSync(join(dir, 'sub'));
  execFileSync('mkfifo', [join(dir, 'fifo')]);
  expect(() => readSmallFile(join(dir, 'big'), 10)).toThrow('larger than 10 bytes');
  expect(() => readSmallFile(join(dir, 'link'), 10)).toThrow('not a regular file');
  expect(() => readSmallFile(join(dir, 'sub'), 10)).toThrow('not a regular file');
  expect(() => readSmallFile(join(dir, 'fifo'), 10)).toThrow('not a regular file');
  expect(() => readSmallFile(join(dir, 'missing'), 10)).toThrow('ENOENT');
});
