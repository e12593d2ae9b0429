/**
 * Group commit: the shim's writes that arrive in the same turn of the event loop share one SQLite
 * transaction, each in its own savepoint. A commit (the WAL write) costs more than the statements of an
 * allocation, so under concurrent ADDs and DELs this is most of ferryd's throughput; a lone request
 * waits one setImmediate. A step that throws is rolled back alone and its caller gets the error; the
 * others still commit. Every caller is answered only after the COMMIT, so nothing is acknowledged that
 * a crash could lose (beyond synchronous=NORMAL's power-loss window, see db.ts).
 */
import { type Db, transactionRunner } from './db';

interface Job {
  fn: () => unknown;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; err: unknown };

export class GroupCommit {
  readonly #db: Db;
  readonly #tx: <T>(fn: () => T) => T;
  #jobs: Job[] = [];

  constructor(db: Db) {
    this.#db = db;
    this.#tx = transactionRunner(db);
  }

  /** Runs `fn` in the next group transaction; resolves with its result once that transaction committed. */
  run<T>(fn: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.#jobs.length === 0) setImmediate(() => this.#flush());
      this.#jobs.push({ fn, resolve: resolve as (value: unknown) => void, reject });
    });
  }

  #flush(): void {
    const jobs = this.#jobs;
    this.#jobs = [];
    const [only] = jobs;
    if (jobs.length === 1 && only) {
      // Alone (as requests one at a time are), the job's own transaction is the group's: no savepoint.
      settle(only, this.#attempt(only.fn));
      return;
    }
    let settled: (readonly [Job, Outcome])[];
    try {
      // The outer call opens the transaction; each inner call is a savepoint.
      settled = this.#tx(() =>
        jobs.map((job) => {
          const outcome = this.#attempt(job.fn);
          // SQLite ends the whole transaction by itself on some errors (disk full, I/O): what ran before is
          // gone, and what comes after must not commit alone. Everyone gets that error.
          if (!this.#db.inTransaction) throw outcome.ok ? new Error('the group transaction ended early') : outcome.err;
          return [job, outcome] as const;
        }),
      );
    } catch (err) {
      // BEGIN or COMMIT failed, or SQLite ended the transaction: nothing of this group was stored.
      for (const job of jobs) job.reject(err);
      return;
    }
    for (const [job, o] of settled) settle(job, o);
  }

  #attempt(fn: () => unknown): Outcome {
    try {
      return { ok: true, value: this.#tx(fn) };
    } catch (err) {
      return { ok: false, err };
    }
  }
}

function settle(job: Job, o: Outcome): void {
  if (o.ok) job.resolve(o.value);
  else job.reject(o.err);
}
