/**
 * A corrupt database, moved aside by ferryd itself so the node is never stuck on it (Azure CNS #642: a
 * corrupt state file blocking the node until a person moved it). The file and its WAL and shared-memory
 * files keep their relation (`ferry.db.corrupt-<time>` with `-wal`), so opening the copy for the
 * post-mortem shows what SQLite saw; only the newest `keep` copies are kept, so a node that keeps
 * corrupting its disk does not fill it. Nothing here is called for a database that is merely newer,
 * locked, unreadable or on a failing disk: those are refused (store/db.ts).
 */
import { readdirSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

export interface MovedAside {
  /** Why the database was taken for corrupt (SQLite's words). */
  reason: string;
  /** Where the database file went; its -wal and -shm, if there were any, went next to it. */
  movedTo: string;
  atMs: number;
  /** Older copies removed to keep at most `keep`. */
  removed: string[];
}

const SUFFIXES = ['', '-wal', '-shm'] as const;

/** `20261201T081500.123Z`: sorts as time does, and is a file name. */
const stampOf = (ms: number) => new Date(ms).toISOString().replaceAll('-', '').replaceAll(':', '');

/** Moves `path` (with its -wal and -shm) aside; keeps the newest `keep` copies. Throws when a rename fails. */
export function moveAside(path: string, reason: string, keep: number, nowMs = Date.now()): MovedAside {
  const movedTo = `${path}.corrupt-${stampOf(nowMs)}`;
  for (const suffix of SUFFIXES) {
    try {
      renameSync(`${path}${suffix}`, `${movedTo}${suffix}`);
    } catch (err) {
      // A WAL or shared-memory file that is not there is fine; the database itself must move.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' && suffix !== '') continue;
      throw err;
    }
  }
  const removed = keptCopies(path).slice(0, -Math.max(1, keep));
  for (const copy of removed) for (const s of SUFFIXES) rmSync(`${copy}${s}`, { force: true });
  return { reason, movedTo, atMs: nowMs, removed };
}

/** The corrupt copies kept next to `path`, oldest first (their database files; -wal and -shm go with each). */
export function keptCopies(path: string): string[] {
  const prefix = `${basename(path)}.corrupt-`;
  let names: string[];
  try {
    names = readdirSync(dirname(path));
  } catch {
    return [];
  }
  return names
    .filter((n) => n.startsWith(prefix) && /^\d{8}T\d{6}\.\d{3}Z$/.test(n.slice(prefix.length)))
    .sort()
    .map((n) => join(dirname(path), n));
}
