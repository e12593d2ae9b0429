import { join } from 'node:path';
import { expect, test } from 'vitest';
import { tempDir } from '../testing/harness';
import { type Db, openDatabase } from './db';
import { GroupCommit } from './group-commit';

function useDb(t: Parameters<typeof tempDir>[0]): Db {
  const { db, close } = openDatabase(join(tempDir(t), 'ferry.db'));
  t.onTestFinished(close);
  db.exec(`CREATE TABLE parent (id INTEGER PRIMARY KEY);
    CREATE TABLE t (x INTEGER UNIQUE, parent INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)`);
  return db;
}

const rows = (db: Db) => db.prepare('SELECT x FROM t ORDER BY x').pluck().all();

test('writes queued in one turn run together after it; a failing one is undone alone', async (t) => {
  const db = useDb(t);
  const group = new GroupCommit(db);
  const insert = db.prepare('INSERT INTO t (x) VALUES (?)');
  const results = [
    group.run(() => insert.run(1).changes),
    group.run(() => {
      insert.run(2);
      throw new Error('step two failed after writing');
    }),
    group.run(() => insert.run(3).changes),
  ];
  expect(rows(db)).toEqual([]); // nothing runs before the turn ends
  const settled = await Promise.allSettled(results);
  expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
  expect(settled[1]).toMatchObject({ reason: { message: 'step two failed after writing' } });
  expect(rows(db)).toEqual([1, 3]);
  expect(db.inTransaction).toBe(false);

  // The next turn is a new group.
  await expect(group.run(() => insert.run(4).changes)).resolves.toBe(1);
  expect(rows(db)).toEqual([1, 3, 4]);
});

test('the group is one transaction: when its COMMIT fails, every caller gets the error and nothing is stored', async (t) => {
  const db = useDb(t);
  const group = new GroupCommit(db);
  const insert = db.prepare('INSERT INTO t (x, parent) VALUES (?, ?)');
  // A deferred foreign key is only checked at COMMIT, so each step succeeds and the commit fails.
  const results = [group.run(() => insert.run(1, null)), group.run(() => insert.run(2, 42))];
  const settled = await Promise.allSettled(results);
  expect(settled.map((s) => s.status)).toEqual(['rejected', 'rejected']);
  expect(settled[0]).toMatchObject({ reason: { message: expect.stringMatching(/FOREIGN KEY/) } });
  expect(rows(db)).toEqual([]);
  expect(db.inTransaction).toBe(false);
  await expect(group.run(() => insert.run(5, null).changes)).resolves.toBe(1);
  expect(rows(db)).toEqual([5]);
});

test('when SQLite ends the transaction under a step, the whole group fails with that error; nothing commits alone', async (t) => {
  const db = useDb(t);
  const group = new GroupCommit(db);
  const insert = db.prepare('INSERT INTO t (x) VALUES (?)');
  // What SQLite does by itself on a full disk or an I/O error: the transaction is rolled back, not just the step.
  const rollback = db.prepare('ROLLBACK');
  const results = [
    group.run(() => insert.run(1)),
    group.run(() => {
      rollback.run();
      throw new Error('disk full');
    }),
    group.run(() => insert.run(3)),
  ];
  const settled = await Promise.allSettled(results);
  expect(settled).toEqual([
    { status: 'rejected', reason: expect.objectContaining({ message: 'disk full' }) },
    { status: 'rejected', reason: expect.objectContaining({ message: 'disk full' }) },
    { status: 'rejected', reason: expect.objectContaining({ message: 'disk full' }) },
  ]);
  expect(rows(db)).toEqual([]);
  expect(db.inTransaction).toBe(false);
  await expect(group.run(() => insert.run(4).changes)).resolves.toBe(1);
  expect(rows(db)).toEqual([4]);
});

test('a write alone in its turn is its own transaction: committed when it returns, undone whole when it throws', async (t) => {
  const db = useDb(t);
  const group = new GroupCommit(db);
  const insert = db.prepare('INSERT INTO t (x, parent) VALUES (?, ?)');
  await expect(group.run(() => insert.run(1, null).changes)).resolves.toBe(1);
  await expect(
    group.run(() => {
      insert.run(2, null);
      throw new Error('failed after writing');
    }),
  ).rejects.toThrow('failed after writing');
  // A deferred foreign key fails the COMMIT of a lone write as it does a group's.
  await expect(group.run(() => insert.run(3, 42))).rejects.toThrow(/FOREIGN KEY/);
  expect(rows(db)).toEqual([1]);
  expect(db.inTransaction).toBe(false);
});
