import { closeSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { expect, test } from 'vitest';
import { tempDir } from '../testing/harness';
import { openDatabase } from './db';
import { SCHEMA_VERSION } from './migrations/index';
import { keptCopies } from './recovery';

test('a fresh database gets the schema, WAL and foreign keys', (t) => {
  const path = join(tempDir(t), 'ferry.db');
  const { db, close } = openDatabase(path);
  t.onTestFinished(close);
  expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
  expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
  expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
  expect(db.pragma('page_size', { simple: true })).toBe(1024);
});

test('while ferryd has the database open, no other connection can read or write it', (t) => {
  const path = join(tempDir(t), 'ferry.db');
  const { db, close } = openDatabase(path);
  t.onTestFinished(close);
  db.exec('CREATE TABLE t (x)');
  const other = new Database(path, { timeout: 0 });
  t.onTestFinished(() => {
    other.close();
  });
  expect(() => other.prepare('SELECT count(*) FROM t').get()).toThrow(/database is locked/);
  close();
  expect(other.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 0 });
});

test('a second opener is refused while the first holds the lock, and admitted after', (t) => {
  const path = join(tempDir(t), 'ferry.db');
  const first = openDatabase(path);
  expect(() => openDatabase(path)).toThrow(/in use by another ferryd/);
  first.close();
  const second = openDatabase(path);
  second.close();
});

test('a database from a newer ferryd is refused and left untouched', (t) => {
  const path = join(tempDir(t), 'ferry.db');
  const raw = new Database(path);
  raw.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
  raw.close();
  expect(() => openDatabase(path)).toThrow(/newer than this ferryd understands/);
  const check = new Database(path);
  expect(check.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION + 1);
  check.close();
});

test('a file that is not a database is refused, never recreated', (t) => {
  const path = join(tempDir(t), 'ferry.db');
  const garbage = 'this is not sqlite, but somebody may need it'.repeat(200);
  writeFileSync(path, garbage);
  expect(() => openDatabase(path)).toThrow(/not a SQLite database or is corrupt/);
  // And the lock was released: the error path does not leave the file locked.
  expect(() => openDatabase(path)).toThrow(/not a SQLite database or is corrupt/);
});

test('rows that break the address invariant are rejected by the schema itself', (t) => {
  const path = join(tempDir(t), 'ferry.db');
  const { db, close } = openDatabase(path);
  t.onTestFinished(close);
  db.prepare("INSERT INTO pools (network, family, subnet) VALUES ('n', 4, '10.0.0.0/24')").run();
  expect(() =>
    db
      .prepare(
        "INSERT INTO addresses (pool_id, offset_hex, address, state, interface_id, since_ms) VALUES (1, '00000001', '10.0.0.1', 'Assigned', NULL, 0)",
      )
      .run(),
  ).toThrow(/CHECK constraint failed/);
});

/** A database with one row, then its header overwritten: SQLite says "file is not a database". */
function corrupt(path: string): void {
  const { db, close } = openDatabase(path);
  db.prepare("INSERT INTO pools (network, family, subnet) VALUES ('n', 4, '10.0.0.0/24')").run();
  close();
  const fd = openSync(path, 'r+');
  writeSync(fd, Buffer.alloc(100, 0x5a), 0, 100, 0);
  closeSync(fd);
  writeFileSync(`${path}-wal`, 'frames of the corrupt database');
}

test('a corrupt database is moved aside with its WAL and a fresh one made, when recovery is asked for', (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'ferry.db');
  corrupt(path);
  const opened = openDatabase(path, { recoverCorrupt: { keep: 3 } });
  t.onTestFinished(opened.close);
  expect(opened.recovered?.reason).toMatch(/not a SQLite database or is corrupt \(file is not a database\)/);
  const movedTo = opened.recovered?.movedTo ?? '';
  expect(movedTo).toMatch(/ferry\.db\.corrupt-\d{8}T\d{6}\.\d{3}Z$/);
  expect(readFileSync(`${movedTo}-wal`, 'utf8')).toBe('frames of the corrupt database');
  expect(keptCopies(path)).toEqual([movedTo]);
  // The fresh database has the schema and nothing of the old one (its WAL was not replayed into it).
  expect(opened.db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
  expect(opened.db.prepare('SELECT count(*) AS n FROM pools').get()).toEqual({ n: 0 });
});

test('at most `keep` corrupt copies are kept, the newest', (t) => {
  const path = join(tempDir(t), 'ferry.db');
  const moved: string[] = [];
  for (let i = 0; i < 4; i++) {
    corrupt(path);
    const opened = openDatabase(path, { recoverCorrupt: { keep: 2 } });
    moved.push(opened.recovered?.movedTo ?? '');
    opened.close();
    // Copies are named by the millisecond.
    const until = Date.now() + 2;
    while (Date.now() < until);
  }
  expect(keptCopies(path)).toEqual(moved.slice(-2));
  expect(existsSync(`${moved[0]}-wal`)).toBe(false);
});

test('a newer database, a locked one or an unreadable lock is refused even with recovery, and left as it is', (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'ferry.db');
  const raw = new Database(path);
  raw.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
  raw.close();
  expect(() => openDatabase(path, { recoverCorrupt: { keep: 3 } })).toThrow(
    expect.objectContaining({ problem: 'newer' }),
  );
  expect(keptCopies(path)).toEqual([]);

  const other = join(dir, 'other.db');
  const first = openDatabase(other);
  expect(() => openDatabase(other, { recoverCorrupt: { keep: 3 } })).toThrow(
    expect.objectContaining({ problem: 'in-use' }),
  );
  first.close();

  const lockIsDir = join(dir, 'third.db');
  mkdirSync(`${lockIsDir}.lock`);
  expect(() => openDatabase(lockIsDir, { recoverCorrupt: { keep: 3 } })).toThrow(
    expect.objectContaining({ problem: 'other', message: expect.stringMatching(/^lock .*third\.db\.lock: EISDIR/) }),
  );
  expect(keptCopies(lockIsDir)).toEqual([]);
});
