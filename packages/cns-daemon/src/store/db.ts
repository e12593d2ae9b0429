/**
 * Opens ferryd's SQLite database: takes the single-writer lock, sets the PRAGMAs, checks integrity and
 * applies migrations in one transaction. Why a database cannot be opened is told apart (DatabaseError's
 * `problem`): another ferryd holds it, it was written by a newer ferryd (always refused: a downgrade must
 * not eat it), it is corrupt (refused, unless the caller asks for recovery: then it is moved aside under
 * the lock, store/recovery.ts, and a fresh one made, which ferryd rebuilds from the node), or anything
 * else: the disk, a permission (refused, with the reason; storage/health.ts deals with a full disk).
 */
import { ftruncateSync, mkdirSync, readFileSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { type FileLock, tryLockFile } from '@ferry/files/lock';
import Database from 'better-sqlite3';
import { StartupError } from '../errors';
import { MIGRATIONS, SCHEMA_VERSION } from './migrations/index';
import { type MovedAside, moveAside } from './recovery';

export type Db = Database.Database;

/** Why a database could not be opened. */
export type DatabaseProblem = 'in-use' | 'newer' | 'corrupt' | 'other';

export class DatabaseError extends StartupError {
  constructor(
    readonly problem: DatabaseProblem,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'DatabaseError';
  }
}

export interface OpenDbOptions {
  /** Path of better_sqlite3.node when running from a bundle (dist/bin); the package's own otherwise. */
  nativeBinding?: string;
  /** Move a corrupt database aside (keeping at most `keep` of them) and start a fresh one, instead of refusing. */
  recoverCorrupt?: { keep: number };
  /** The socket this ferryd serves, written into the lock file after its PID (lockHolderOf reads it). */
  socket?: string;
}

/** Who holds `<database>.lock`, as its holder wrote it: PID and socket. */
export function lockHolderOf(path: string): { pid?: number; socket?: string } {
  let text: string;
  try {
    text = readFileSync(`${path}.lock`, 'utf8');
  } catch {
    return {};
  }
  const [pid, socket] = text.split('\n');
  return { ...(pid && /^\d+$/.test(pid) ? { pid: Number(pid) } : {}), ...(socket ? { socket } : {}) };
}

export interface OpenedDb {
  db: Db;
  /** Set when the database was corrupt and a fresh one was made: what was moved where, and why. */
  recovered?: MovedAside;
  /** Closes the database (checkpointing the WAL) and drops the lock. */
  close(): void;
}

export function openDatabase(path: string, opts: OpenDbOptions = {}): OpenedDb {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const releaseLock = lockDatabase(path, opts.socket);
  let db: Db | undefined;
  let recovered: MovedAside | undefined;
  const { recoverCorrupt } = opts;
  try {
    try {
      // Still under the lock when it moves: no other ferryd can open the file meanwhile.
      db = openUnderLock(
        path,
        opts,
        recoverCorrupt && ((reason) => (recovered = moveAside(path, reason, recoverCorrupt.keep))),
      );
    } catch (err) {
      if (!(err instanceof DatabaseError && err.problem === 'corrupt')) throw err;
      if (!recovered) {
        throw new DatabaseError(
          'corrupt',
          `${err.message}; refusing to start: move it aside to start with an empty one`,
          {
            cause: err,
          },
        );
      }
      db = openUnderLock(path, opts);
    }
  } catch (err) {
    releaseLock();
    throw err;
  }
  const opened = db;
  return {
    db: opened,
    ...(recovered ? { recovered } : {}),
    close() {
      if (opened.open) opened.close();
      releaseLock();
    },
  };
}

/**
 * Opens, configures and migrates. A corrupt file is handed to `whenCorrupt` while SQLite still has it
 * open: closing a database it could not open deletes its WAL, which the post-mortem wants.
 */
function openUnderLock(path: string, opts: OpenDbOptions, whenCorrupt?: (reason: string) => void): Db {
  let db: Db | undefined;
  try {
    db = new Database(path, opts.nativeBinding ? { nativeBinding: opts.nativeBinding } : {});
    configure(db, path);
    migrate(db, path);
    return db;
  } catch (err) {
    const e =
      err instanceof DatabaseError
        ? err
        : isCorruption(err)
          ? new DatabaseError('corrupt', `database ${path} is corrupt (${(err as Error).message})`, { cause: err })
          : new DatabaseError('other', `open database ${path}: ${(err as Error).message}`, { cause: err });
    try {
      if (e.problem === 'corrupt') whenCorrupt?.(e.message);
    } catch (moveErr) {
      throw new DatabaseError('other', `${e.message}; moving it aside failed: ${(moveErr as Error).message}`, {
        cause: moveErr,
      });
    } finally {
      db?.close();
    }
    throw e;
  }
}

/** SQLite's words for a file that is no database, or one whose pages do not hold together. */
function isCorruption(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return (
    typeof code === 'string' &&
    (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT' || code.startsWith('SQLITE_CORRUPT_'))
  );
}

/**
 * An exclusive flock on `<db>.lock`: two ferryd processes can never write one database. The kernel drops
 * the lock when the process dies, so a kill -9 never leaves it stale.
 */
function lockDatabase(path: string, socket: string | undefined): () => void {
  const lockPath = `${path}.lock`;
  let lock: FileLock | undefined;
  try {
    lock = tryLockFile(lockPath, 'exclusive');
  } catch (err) {
    // EROFS, EACCES, ENOSPC...: said as it is, never taken for corruption.
    throw new DatabaseError('other', `lock ${lockPath}: ${(err as Error).message}`, { cause: err });
  }
  if (!lock) {
    throw new DatabaseError('in-use', `database ${path} is in use by another ferryd (lock ${lockPath} is held)`);
  }
  try {
    ftruncateSync(lock.fd, 0);
    writeSync(lock.fd, `${process.pid}\n${socket ?? ''}\n`);
  } catch {
    // For operators (`cat ferry.db.lock`) and a successor's better message; a full disk must not stop ferryd.
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
    if (!isCorruption(err)) throw err;
    throw new DatabaseError(
      'corrupt',
      `database ${path} is not a SQLite database or is corrupt (${(err as Error).message})`,
      { cause: err },
    );
  }
  if (mode !== 'wal')
    throw new DatabaseError('other', `database ${path}: cannot switch to WAL (journal_mode is ${String(mode)})`);
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
    throw new DatabaseError('corrupt', `database ${path} failed its integrity check (${String(check)})`);
  }
}

function migrate(db: Db, path: string): void {
  const current = Number(db.pragma('user_version', { simple: true }));
  if (current > SCHEMA_VERSION) {
    throw new DatabaseError(
      'newer',
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
