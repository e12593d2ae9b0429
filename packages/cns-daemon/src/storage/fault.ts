/**
 * Which errors mean "the disk cannot take ferryd's writes" rather than a bug or bad input: SQLite's
 * result codes as better-sqlite3 reports them (SqliteError.code, extended codes included) and node's
 * errno codes. Such a failure is transient for the runtime (space comes back, the disk is remounted);
 * everything else keeps its own meaning.
 */

/** What kind of storage failure: the label of ferry_storage_errors_total and the words of the message. */
export type StorageCause = 'full' | 'read-only' | 'io';

export interface StorageFault {
  cause: StorageCause;
  /** The code as reported: SQLITE_FULL, SQLITE_IOERR_WRITE, ENOSPC, EROFS, ... */
  code: string;
  /** The file a node fs call named; undefined for SQLite (the failing file is the database). */
  path?: string;
}

const ERRNO_CAUSES: Readonly<Record<string, StorageCause>> = {
  ENOSPC: 'full',
  EDQUOT: 'full',
  EROFS: 'read-only',
  EIO: 'io',
};

/** How deep `cause` chains are followed (a wrapped error keeps its origin there). */
const MAX_CAUSE_DEPTH = 5;

/** The storage fault behind `err` (or behind its `cause` chain), or undefined when it is not one. */
export function storageFaultOf(err: unknown): StorageFault | undefined {
  let e: unknown = err;
  for (let depth = 0; depth < MAX_CAUSE_DEPTH && e instanceof Error; depth++) {
    const fault = sqliteFault(e) ?? errnoFault(e);
    if (fault) return fault;
    e = e.cause;
  }
  return undefined;
}

function sqliteFault(e: Error): StorageFault | undefined {
  const code = (e as { code?: unknown }).code;
  if (e.name !== 'SqliteError' || typeof code !== 'string') return undefined;
  if (code === 'SQLITE_FULL') return { cause: 'full', code };
  if (code === 'SQLITE_READONLY' || code.startsWith('SQLITE_READONLY_')) return { cause: 'read-only', code };
  // IOERR_NOMEM is memory, not the disk.
  if ((code === 'SQLITE_IOERR' || code.startsWith('SQLITE_IOERR_')) && code !== 'SQLITE_IOERR_NOMEM') {
    return { cause: 'io', code };
  }
  return undefined;
}

function errnoFault(e: Error): StorageFault | undefined {
  const { code, path, syscall } = e as NodeJS.ErrnoException;
  // An errno error from node carries its syscall; a look-alike code on another error is not one.
  if (typeof code !== 'string' || typeof syscall !== 'string') return undefined;
  const cause = ERRNO_CAUSES[code];
  if (!cause) return undefined;
  return { cause, code, ...(typeof path === 'string' ? { path } : {}) };
}

const CAUSE_TEXT: Readonly<Record<StorageCause, string>> = {
  full: 'no space left on the filesystem',
  'read-only': 'the filesystem is read-only',
  io: 'I/O error',
};

/** "no space left on the filesystem (SQLITE_FULL)" */
export function describeFault(f: StorageFault): string {
  return `${CAUSE_TEXT[f.cause]} (${f.code})`;
}
