/**
 * Opens ferryd's SQLite database: takes the single-writer lock, sets the PRAGMAs, checks integrity and
 * applies migrations in one transaction. A corrupt file or one written by a newer ferryd is refused,
 * never recreated: it may hold the only record of which pod owns which address.
 */
import { ftruncateSync, mkdirSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { type FileLock, tryLockFile } from '@ferry/files/lock';
import Database from 'better-sqlite3';
import { StartupError } from '../errors';
import { MIGRATIONS, SCHEMA_VERSION } from './migrations/index';

export type Db = Database.Database;

export interface OpenDbOptions {
  /** Path of better_sqlite3.node when running from a bundle (dist/bin); the package's own otherwise. */
  nativeBinding?: string;
}

export interface OpenedDb {
  db: Db;
  /** Closes the database (checkpointing the WAL) and drops the lock. */
  close(): void;
}

export function openDatabase(path: string, opts: OpenDbOptions = {}): OpenedDb {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const releaseLock = lockDatabase(path);
  let db: Db | undefined;
  try {
    db = new Database(path, opts.nativeBinding ? { nativeBinding: opts.nativeBinding } : {});
    configure(db, path);
    migrate(db, path);
  } catch (err) {
    db?.close();
    releaseLock();
    if (err instanceof StartupError) throw err;
    throw new StartupError(`open database ${path}: ${(err as Error).message}`, { cause: err });
  }
  const opened = db;
  return {
    db: opened,
    close() {
      if (opened.open) opened.close();
      releaseLock();
    },
  };
}

/**
 * An exclusive flock on `<db>.lock`: two ferryd processes can never write one database. The kernel drops
 * the lock when the process dies, so a kill -9 never leaves it stale.
 */
function lockDatabase(path: string): () => void {
  const lockPath = `${path}.lock`;
  let lock: FileLock | undefined;
  try {
    lock = tryLockFile(lockPath, 'exclusive');
  } catch (err) {
    throw new StartupError(`lock ${lockPath}: ${(err as Error).message}`, { cause: err });
  }
  if (!lock) throw new StartupError(`database ${path} is in use by another ferryd (lock ${lockPath} is held)`);
  try {
    ftruncateSync(lock.fd, 0);
    writeSync(lock.fd, `${process.pid}\n`);
  } catch {
    // The PID is for operators only (`cat ferry.db.lock`); a full disk must not stop ferryd here.
  }
  return lock.release;
}

function configure(db: Db, path: string): void {
  let mode: unknown;
  try {
    // Takes effect only when the file is new. Rows are small and every transaction dirties one leaf page
    // per table and index it touches; WAL writes each dirty page whole, so 1 KiB pages write a quarter of
    // what the 4 KiB default does per commit (bench/ferryd.bench.ts).
    db.pragma('page_size = 1024');
    // The flock already makes ferryd the only process on this file; telling SQLite so keeps the WAL index
    // in memory and drops the shared-memory file and its locking calls from every transaction.
    db.pragma('locking_mode = EXCLUSIVE');
    mode = db.pragma('journal_mode = WAL', { simple: true });
  } catch (err) {
    throw new StartupError(
      `database ${path} is not a SQLite database or is corrupt (${(err as Error).message}); refusing to start: move it aside to start with an empty one`,
      { cause: err },
    );
  }
  if (mode !== 'wal')
    throw new StartupError(`database ${path}: cannot switch to WAL (journal_mode is ${String(mode)})`);
  // NORMAL in WAL mode survives a crash of ferryd (kill -9): committed transactions are in the WAL, which
  // the kernel holds. Only a power loss can drop the last commits, and then every pod is gone as well;
  // the stale-endpoint reconciler and CNI GC release what they held. FULL would add an fsync per request.
  db.pragma('synchronous = NORMAL');
  // A checkpoint copies the WAL's pages into the file and syncs both; every 10,000 pages (~10 MiB) rather
  // than SQLite's 1,000 makes that a tenth as often for the same few hot pages. The WAL is cut back to
  // 4 MiB after each one.
  db.pragma('wal_autocheckpoint = 10000');
  db.pragma('journal_size_limit = 4194304');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  const check = db.pragma('quick_check', { simple: true });
  if (check !== 'ok') {
    throw new StartupError(`database ${path} failed its integrity check (${String(check)}); refusing to start`);
  }
}

function migrate(db: Db, path: string): void {
  const current = Number(db.pragma('user_version', { simple: true }));
  if (current > SCHEMA_VERSION) {
    throw new StartupError(
      `database ${path} has schema version ${current}, newer than this ferryd understands (${SCHEMA_VERSION}); refusing to start: run a ferryd at least as new as the one that wrote it`,
    );
  }
  const pending = MIGRATIONS.filter((m) => m.version > current);
  if (pending.length === 0) return;
  db.transaction(() => {
    for (const m of pending) db.exec(m.sql);
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
  })();
}

/**
 * The smallest write that needs no table of its own (and so no schema change): the schema version is
 * written back with its own value, which puts page 1 into the WAL and commits. Throws what SQLite throws
 * (SQLITE_FULL, SQLITE_IOERR_*, ...); storage/health.ts probes with it while storage is failing.
 */
export function probeWrite(db: Db): void {
  db.transaction(() => {
    const version = Number(db.pragma('user_version', { simple: true }));
    db.pragma(`user_version = ${version}`);
  })();
}

/**
 * Runs `fn` in a transaction, or in a savepoint when one is already open (so a failing step of a group
 * commit undoes only itself). better-sqlite3 builds a wrapper per db.transaction() call, which costs
 * more than a small statement: callers make one runner and keep it.
 */
export function transactionRunner(db: Db): <T>(fn: () => T) => T {
  const tx = db.transaction((fn: () => unknown) => fn());
  return <T>(fn: () => T): T => tx(fn) as T;
}
