import { existsSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, onTestFinished, test } from 'vitest';
import { SHARED_TEMP_PREFIX } from './atomic';
import { ABANDONED_TEMP_MS, isTempFile, removeIfAbandoned } from './sweep';

test('a temp file older than the limit goes, a younger one and a finished file stay', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-t-sweep-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const now = Date.now();
  const put = (name: string, ageMs: number) => {
    writeFileSync(join(dir, name), '{"version":');
    utimesSync(join(dir, name), (now - ageMs) / 1000, (now - ageMs) / 1000);
  };
  put(`${SHARED_TEMP_PREFIX}abandoned`, ABANDONED_TEMP_MS + 1000);
  put(`${SHARED_TEMP_PREFIX}being-written`, ABANDONED_TEMP_MS - 1000);
  put('entry.json', ABANDONED_TEMP_MS * 10);
  for (const name of [`${SHARED_TEMP_PREFIX}abandoned`, `${SHARED_TEMP_PREFIX}being-written`, 'entry.json']) {
    removeIfAbandoned(dir, name, now);
  }
  expect(existsSync(join(dir, `${SHARED_TEMP_PREFIX}abandoned`))).toBe(false);
  expect(existsSync(join(dir, `${SHARED_TEMP_PREFIX}being-written`))).toBe(true);
  expect(existsSync(join(dir, 'entry.json'))).toBe(true);
  // Gone meanwhile: nothing to do, no error.
  expect(() => removeIfAbandoned(dir, `${SHARED_TEMP_PREFIX}gone`, now)).not.toThrow();
});

test('temp files are told by their prefix', () => {
  expect(isTempFile(`${SHARED_TEMP_PREFIX}123-abc-1`)).toBe(true);
  expect(isTempFile('0123abcd.json')).toBe(false);
});
