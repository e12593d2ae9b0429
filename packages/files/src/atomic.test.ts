import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, onTestFinished, test, vi } from 'vitest';
import { EXECUTABLE_WRITE_BYTES, writeFileAtomically } from './atomic';
import * as fs from './fs';

// The real node:fs calls, with closeSync recorded (what was closed, how often).
vi.mock('./fs', async (importOriginal) => {
  const real = await importOriginal<typeof import('./fs')>();
  return { ...real, closeSync: vi.fn(real.closeSync) };
});

test('writes whole files with the mode asked, replaces, and leaves no temp file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-t-atomic-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  writeFileAtomically(dir, 'a.conf', 'one', { mode: 0o640 });
  writeFileAtomically(dir, 'a.conf', 'two', { mode: 0o640 });
  expect(readFileSync(join(dir, 'a.conf'), 'utf8')).toBe('two');
  expect(statSync(join(dir, 'a.conf')).mode & 0o777).toBe(0o640);
  expect(readdirSync(dir)).toEqual(['a.conf']);
});

test('an executable written in pieces is whole', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-t-atomic-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const bytes = Uint8Array.from({ length: 3 * EXECUTABLE_WRITE_BYTES + 123 }, (_, i) => (i * 7) % 251);
  writeFileAtomically(dir, 'exe', bytes, { mode: 0o755, maxWriteBytes: EXECUTABLE_WRITE_BYTES });
  expect(new Uint8Array(readFileSync(join(dir, 'exe')))).toEqual(bytes);
  expect(statSync(join(dir, 'exe')).mode & 0o777).toBe(0o755);
});

test('a failed rename removes the temp file and reports', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-t-atomic-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  // The target is a non-empty directory: rename(2) refuses to replace it.
  mkdirSync(join(dir, 'busy'));
  writeFileSync(join(dir, 'busy', 'f'), '');
  expect(() => writeFileAtomically(dir, 'busy', 'data', { mode: 0o600, tempPrefix: '.tmp-' })).toThrow();
  expect(readdirSync(dir)).toEqual(['busy']);
});

test('a failed rename closes the temp file once, not a second time', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-t-atomic-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'busy'));
  writeFileSync(join(dir, 'busy', 'f'), '');
  const close = vi.mocked(fs.closeSync);
  close.mockClear();
  expect(() => writeFileAtomically(dir, 'busy', 'data', { mode: 0o600 })).toThrow(/ENOTEMPTY|EISDIR|EEXIST/);
  // Once closed, the number is free for any file another thread opens; closing it again closes that file.
  expect(close).toHaveBeenCalledTimes(1);
});
