import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { expect, test } from 'vitest';
import { tempDir } from '../testing/harness';
import { openDatabase } from './db';
import { SCHEMA_VERSION } from './migrations/index';

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
