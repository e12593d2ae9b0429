import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { tempDir } from '../testing/harness';
import { isLiveNetns, isNetnsGone } from './netns';

test('a live namespace is live; a path with nothing, or an ordinary file left where a bind mount was, is gone', (t) => {
  const leftover = join(tempDir(t), 'netns-file');
  writeFileSync(leftover, '');
  expect(isLiveNetns('/proc/self/ns/net')).toBe(true);
  expect(isNetnsGone('/proc/self/ns/net')).toBe(false);
  expect(isNetnsGone('/var/run/netns/ferry-t-never')).toBe(true);
  expect(isNetnsGone(leftover)).toBe(true);
});

test("an adopted attachment's unknown netns ('') is not gone: GC, doctor and the stale sweep leave it", () => {
  expect(isLiveNetns('')).toBe(false);
  expect(isNetnsGone('')).toBe(false);
});
