import { basename, dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { basenameOf, dirnameOf, joinName } from './paths';

describe('paths', () => {
  const paths = ['/var/log/ferry/cni.log', '/a', '/', '/a/b/', 'rel/x', 'x', '/run/ferry/'];
  it.each(paths)('dirname and basename of %s are node:path’s', (p) => {
    expect(dirnameOf(p)).toBe(dirname(p));
    expect(basenameOf(p)).toBe(basename(p));
  });
  it.each([
    ['/var/lib/ferry', 'lock'],
    ['/var/lib/ferry/', 'x.json'],
    ['/', 'tmp'],
  ])('joinName(%s, %s) is node:path’s join', (dir, name) => {
    expect(joinName(dir, name)).toBe(join(dir, name));
  });
});
