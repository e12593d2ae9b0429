/**
 * dirname, basename and join for the paths Ferry builds from its config (absolute, already
 * normalised) and file names of its own. Not node:path: loading it costs each exec of the Bun binary
 * ~3 MiB of resident memory (bench/README.md), for three string operations.
 */

/** `path` without its trailing slashes (but `/` stays `/`). */
const trimmed = (path: string) => path.replace(/(?<=.)\/+$/, '');

/** The directory part, as node:path's dirname: `/a/b` → `/a`, `/a` → `/`, `a` → `.`. */
export function dirnameOf(path: string): string {
  const p = trimmed(path);
  const i = p.lastIndexOf('/');
  if (i < 0) return '.';
  return i === 0 ? '/' : trimmed(p.slice(0, i));
}

/** The last part, as node:path's basename: `/a/b` → `b`. */
export function basenameOf(path: string): string {
  const p = trimmed(path);
  return p.slice(p.lastIndexOf('/') + 1);
}

/** `name` (one path element) inside `dir`. */
export const joinName = (dir: string, name: string): string => (dir.endsWith('/') ? `${dir}${name}` : `${dir}/${name}`);
