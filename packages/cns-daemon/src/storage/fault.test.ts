import { readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { expect, test } from 'vitest';
import { describeFault, storageFaultOf } from './fault';

/** The error `fn` throws (it must throw). */
function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a throw');
}

/** An error shaped exactly as node's fs reports one (real ENOSPC/EROFS/EIO need a full or broken disk). */
function errnoError(code: string, syscall: string, path: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: ${syscall} '${path}'`), { code, errno: -1, syscall, path });
}

function memoryDb(): Database.Database {
  const db = new Database(':memory:');
  db.exec('CREATE TABLE t (x BLOB)');
  return db;
}

test("SQLite's own failures: a full database and a read-only one are storage faults", () => {
  const db = memoryDb();
  try {
    // max_page_count is SQLite's own quota: past it, SQLITE_FULL exactly as on a full disk.
    db.pragma(`max_page_count = ${Number(db.pragma('page_count', { simple: true }))}`);
    const full = thrownBy(() => db.prepare('INSERT INTO t VALUES (?)').run(Buffer.alloc(8192)));
    expect(storageFaultOf(full)).toEqual({ cause: 'full', code: 'SQLITE_FULL' });
    db.pragma('max_page_count = 1000000');
    db.pragma('query_only = ON');
    const readOnly = thrownBy(() => db.prepare('INSERT INTO t VALUES (1)').run());
    expect(storageFaultOf(readOnly)).toEqual({ cause: 'read-only', code: 'SQLITE_READONLY' });
  } finally {
    db.close();
  }
});

test('other SQLite errors are not storage faults', () => {
  const db = memoryDb();
  try {
    db.exec('CREATE TABLE u (k TEXT PRIMARY KEY)');
    db.exec("INSERT INTO u VALUES ('a')");
    expect(storageFaultOf(thrownBy(() => db.exec("INSERT INTO u VALUES ('a')")))).toBeUndefined();
    expect(storageFaultOf(thrownBy(() => db.exec('SELECT nope FROM t')))).toBeUndefined();
  } finally {
    db.close();
  }
});

test.for([
  ['SQLITE_IOERR', 'io'],
  ['SQLITE_IOERR_WRITE', 'io'],
  ['SQLITE_IOERR_FSYNC', 'io'],
  ['SQLITE_READONLY_DBMOVED', 'read-only'],
] as const)('SqliteError %s is a storage fault (%s)', ([code, cause]) => {
  // better-sqlite3 cannot be made to hit an I/O error on demand; its error class is name + code.
  const err = Object.assign(new Error('disk I/O error'), { name: 'SqliteError', code });
  expect(storageFaultOf(err)).toEqual({ cause, code });
});

test("SQLITE_IOERR_NOMEM is memory, not the disk; a code without SQLite's class is not SQLite's", () => {
  expect(storageFaultOf(Object.assign(new Error('x'), { name: 'SqliteError', code: 'SQLITE_IOERR_NOMEM' }))).toBe(
    undefined,
  );
  expect(storageFaultOf(Object.assign(new Error('x'), { code: 'SQLITE_FULL' }))).toBeUndefined();
});

test.for([
  ['ENOSPC', 'full'],
  ['EDQUOT', 'full'],
  ['EROFS', 'read-only'],
  ['EIO', 'io'],
] as const)('node fs error %s is a storage fault (%s) naming its path', ([code, cause]) => {
  expect(storageFaultOf(errnoError(code, 'open', '/var/lib/ferry/delete-queue/x.json'))).toEqual({
    cause,
    code,
    path: '/var/lib/ferry/delete-queue/x.json',
  });
});

test('a real ENOENT is not a storage fault, nor is an errno-like code without a syscall', () => {
  const enoent = thrownBy(() => readFileSync('/nonexistent/ferry-unit-test'));
  expect((enoent as NodeJS.ErrnoException).code).toBe('ENOENT');
  expect(storageFaultOf(enoent)).toBeUndefined();
  expect(storageFaultOf(Object.assign(new Error('x'), { code: 'ENOSPC' }))).toBeUndefined();
  expect(storageFaultOf('ENOSPC')).toBeUndefined();
  expect(storageFaultOf(undefined)).toBeUndefined();
});

test('a fault wrapped as the cause of another error is still found', () => {
  const inner = errnoError('EROFS', 'rename', '/q/a.json');
  const outer = new Error('write queue entry', { cause: new Error('atomic write', { cause: inner }) });
  expect(storageFaultOf(outer)).toEqual({ cause: 'read-only', code: 'EROFS', path: '/q/a.json' });
});

test('describeFault says the cause in words and keeps the code', () => {
  expect(describeFault({ cause: 'full', code: 'SQLITE_FULL' })).toBe('no space left on the filesystem (SQLITE_FULL)');
  expect(describeFault({ cause: 'read-only', code: 'EROFS' })).toBe('the filesystem is read-only (EROFS)');
  expect(describeFault({ cause: 'io', code: 'SQLITE_IOERR_WRITE' })).toBe('I/O error (SQLITE_IOERR_WRITE)');
});
