import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, onTestFinished, test } from 'vitest';
import { writeFileAtomically } from './atomic';

test('writes whole files with the mode asked, replaces, and leaves no temp file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-t-atomic-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  writeFileAtomically(dir, 'a.conf', 'one', { mode: 0o640 });
  writeFileAtomically(dir, 'a.conf', 'two', { mode: 0o640 });
  expect(readFileSync(join(dir, 'a.conf'), 'utf8')).toBe('two');
  expect(statSync(join(dir, 'a.conf')).mode & 0o777).toBe(0o640);
  expect(readdirSync(dir)).toEqual(['a.conf']);
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
