/**
 * ferryd's side of the delete queue: applies each entry the shim wrote while ferryd was unreachable,
 * exactly once (the file is removed after it is applied; applying is idempotent anyway).
 *
 * - At start-up ferryd takes the exclusive lock, drains, starts serving, and only then lets go, so a
 *   shim's DEL either reaches a serving ferryd or lands in the queue before the drain (the shim writes
 *   under the shared lock). After that, fs.watch and the reconciler's period pick up new entries.
 * - An entry names an attachment and when the shim gave up; an attachment created after that time is
 *   a re-ADD and is left alone.
 * - Files are untrusted input: anything that is not a regular file named like an entry, is too big, is
 *   not JSON, or does not fit the schema is moved aside into failed/ with the reason, never executed.
 *   Entries that fail to apply are retried with backoff and set aside after MAX_ATTEMPTS; those that fail
 *   because ferryd's storage does wait for it instead (storage/health.ts drains again once it is back).
 */
import { createHash } from 'node:crypto';
import { existsSync, type FSWatcher, mkdirSync, readdirSync, renameSync, unlinkSync, watch } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomically } from '@ferry/files';
import { type FileLock, lockFile } from '@ferry/files/lock';
import { readSmallFile } from '@ferry/files/read-small';
import { isTempFile, removeIfAbandoned } from '@ferry/files/sweep';
import {
  FailedEntrySchema,
  QUEUE_ENTRY_MAX_BYTES,
  QUEUE_ENTRY_NAME_RE,
  type QueueEntry,
  QueueEntrySchema,
  type QueueStatus,
} from '@ferry/shared-types/api/queue';
import { CniError, Code } from '@ferry/shared-types/errors';
import { describeFirstIssue, parseJsonOrUndefined } from '@ferry/shared-types/parse';
import type { Logger } from 'pino';
import * as z from 'zod/mini';
import type { Attachments } from '../attachments/attachments';
import type { StorageHealth } from '../storage/health';

const MAX_ATTEMPTS = 5;
const FAILED = 'failed';
const LOCK = 'lock';

/** What failed/<id>.reason.json holds: a failed entry as listed, less its file name. */
const ReasonSchema = z.omit(FailedEntrySchema, { file: true });

export interface DrainerDeps {
  dir: string;
  attachments: Attachments;
  /** Entries that fail because the disk does (full, read-only) wait for it, uncounted, never set aside. */
  storage: StorageHealth;
  log: Logger;
  now: () => number;
}

export interface DrainResult {
  applied: number;
  stale: number;
  setAside: number;
}

export class Drainer {
  readonly #deps: DrainerDeps;
  readonly #attempts = new Map<string, { n: number; nextAt: number; lastError: string }>();
  #lock: FileLock | undefined;
  #watcher: FSWatcher | undefined;
  #draining: Promise<DrainResult> | undefined;
  #again = false;
  #stopped = false;
  /** Applied since start (metrics). */
  appliedTotal = 0;

  constructor(deps: DrainerDeps) {
    this.#deps = deps;
    mkdirSync(deps.dir, { recursive: true, mode: 0o700 });
  }

  /**
   * Takes the exclusive lock, waiting at most `timeoutMs` for shims that hold it shared. If it cannot
   * be had, ferryd goes on (as Cilium's agent does) and says that a DEL written meanwhile may wait for
   * the next rescan.
   */
  async lockExclusive(timeoutMs: number): Promise<void> {
    this.#lock = await lockFile(join(this.#deps.dir, LOCK), 'exclusive', timeoutMs);
    if (this.#lock) return;
    this.#deps.log.warn(
      { dir: this.#deps.dir },
      'delete queue lock not acquired; draining anyway (a DEL queued now waits for the next rescan)',
    );
  }

  /** Lets shims queue again; called once ferryd serves. */
  unlock(): void {
    this.#lock?.release();
    this.#lock = undefined;
  }

  /** New entries are applied as they appear. */
  watch(): void {
    this.#watcher = watch(this.#deps.dir, () => {
      this.drainSoon();
    });
    this.#watcher.on('error', (err) =>
      this.#deps.log.warn({ err }, 'delete queue watch failed; the periodic rescan still drains'),
    );
  }

  /** Stops watching and waits for a pass in flight, so the store can close under no one. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#watcher?.close();
    this.#watcher = undefined;
    this.unlock();
    await this.#draining?.catch(() => undefined);
  }

  drainSoon(): void {
    if (this.#stopped) return;
    this.drain().catch((err: unknown) => this.#deps.log.error({ err }, 'draining the delete queue failed'));
  }

  /** One pass over the queue; a call during a pass schedules one more pass after it. */
  drain(): Promise<DrainResult> {
    if (this.#draining) {
      this.#again = true;
      return this.#draining;
    }
    this.#draining = this.#pass().finally(() => {
      this.#draining = undefined;
      if (this.#again) {
        this.#again = false;
        this.drainSoon();
      }
    });
    return this.#draining;
  }

  async #pass(): Promise<DrainResult> {
    const result: DrainResult = { applied: 0, stale: 0, setAside: 0 };
    // A queued DEL of an ADD committed through the journal must see that commit (and its time).
    this.#deps.attachments.settleJournal();
    const started = performance.now();
    const names = readdirSync(this.#deps.dir);
    for (const [k, name] of names.entries()) {
      // Keep the event loop responsive while a long queue drains (requests keep being served).
      if (k > 0 && k % 200 === 0) await new Promise((r) => setImmediate(r));
      if (name === LOCK || name === FAILED) continue;
      if (isTempFile(name)) {
        removeIfAbandoned(this.#deps.dir, name, this.#deps.now());
        continue;
      }
      if (!QUEUE_ENTRY_NAME_RE.test(name)) {
        this.#setAside(name, 'unexpected file name: not written by ferry-cni');
        result.setAside++;
        continue;
      }
      const outcome = this.#applyOne(name);
      if (outcome === 'applied') result.applied++;
      else if (outcome === 'stale') result.stale++;
      else if (outcome === 'set-aside') result.setAside++;
    }
    this.appliedTotal += result.applied + result.stale;
    if (result.applied + result.stale + result.setAside > 0) {
      this.#deps.log.info({ ...result, tookMs: Math.round(performance.now() - started) }, 'delete queue drained');
    }
    return result;
  }

  #applyOne(name: string): 'applied' | 'stale' | 'set-aside' | 'waiting' | 'gone' {
    const path = join(this.#deps.dir, name);
    const attempt = this.#attempts.get(name);
    if (attempt && attempt.nextAt > this.#deps.now()) return 'waiting';
    let entry: QueueEntry;
    try {
      entry = readEntry(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'gone';
      this.#setAside(name, (err as Error).message);
      return 'set-aside';
    }
    try {
      const outcome = this.#deps.attachments.releaseQueued(entry);
      unlinkSync(path);
      this.#attempts.delete(name);
      this.#deps.log.info(
        {
          containerId: entry.containerId,
          ifName: entry.ifName,
          network: entry.network,
          queuedAt: entry.queuedAt,
          outcome,
        },
        outcome === 'stale'
          ? 'queued DEL skipped: the endpoint was added again after it was queued'
          : 'queued DEL applied',
      );
      return outcome === 'stale' ? 'stale' : 'applied';
    } catch (err) {
      // Not the entry's fault: it stays, uncounted and with no backoff (`ferryctl queue` shows why), and
      // the pass that follows a successful storage probe applies it.
      const storageErr = this.#deps.storage.errorOf(err, 'drain');
      if (storageErr) {
        this.#attempts.set(name, { n: attempt?.n ?? 0, nextAt: this.#deps.now(), lastError: storageErr.message });
        return 'waiting';
      }
      const n = (attempt?.n ?? 0) + 1;
      const lastError = (err as Error).message;
      if (n >= MAX_ATTEMPTS) {
        this.#attempts.delete(name);
        this.#setAside(name, `could not apply after ${n} attempts: ${lastError}`);
        return 'set-aside';
      }
      this.#attempts.set(name, { n, nextAt: this.#deps.now() + Math.min(60_000, 1000 * 2 ** (n - 1)), lastError });
      this.#deps.log.warn({ err, entry: name, attempt: n }, 'queued DEL failed; will retry');
      return 'waiting';
    }
  }

  /** Moves a file aside into failed/, under a hash of its name (the name itself may be hostile). */
  #setAside(name: string, reason: string): void {
    const failed = join(this.#deps.dir, FAILED);
    const id = createHash('sha256').update(name).digest('hex');
    try {
      // Fails when something else took the name failed (a file): the entry then stays where it is.
      mkdirSync(failed, { recursive: true, mode: 0o700 });
      renameSync(join(this.#deps.dir, name), join(failed, id));
      // Atomic: a reason cut short by a crash or a full disk would hide the entry from `ferryctl queue`.
      writeFileAtomically(
        failed,
        `${id}.reason.json`,
        JSON.stringify({ originalName: name, reason, movedAt: new Date(this.#deps.now()).toISOString() }),
        { mode: 0o600 },
      );
    } catch (err) {
      this.#deps.log.error({ err, entry: name }, 'could not move a queue entry aside');
      return;
    }
    this.#deps.log.warn({ entry: name, reason, failed: join(failed, id) }, 'delete queue entry set aside');
  }

  status(): QueueStatus {
    const now = this.#deps.now();
    const pending: QueueStatus['pending'] = [];
    let oldest = now;
    for (const name of readdirSync(this.#deps.dir)) {
      if (!QUEUE_ENTRY_NAME_RE.test(name)) continue;
      const a = this.#attempts.get(name);
      let entry: QueueEntry | undefined;
      try {
        entry = readEntry(join(this.#deps.dir, name));
      } catch {
        entry = undefined;
      }
      if (entry) oldest = Math.min(oldest, Date.parse(entry.queuedAt));
      pending.push({
        file: name,
        ...(entry
          ? { network: entry.network, containerId: entry.containerId, ifName: entry.ifName, queuedAt: entry.queuedAt }
          : {}),
        attempts: a?.n ?? 0,
        ...(a ? { lastError: a.lastError } : {}),
      });
    }
    return {
      dir: this.#deps.dir,
      pending,
      failed: this.#failed(),
      oldestAgeSec: pending.length ? (now - oldest) / 1000 : 0,
    };
  }

  #failed(): QueueStatus['failed'] {
    const failed = join(this.#deps.dir, FAILED);
    let names: string[];
    try {
      names = readdirSync(failed);
    } catch {
      return [];
    }
    return names
      .filter((n) => /^[0-9a-f]{64}\.reason\.json$/.test(n))
      .flatMap((n) => {
        const r = ReasonSchema.safeParse(parseJsonOrUndefined(readReason(join(failed, n))));
        return r.success ? [{ file: n.slice(0, 64), ...r.data }] : [];
      });
  }

  /** An operator puts a set-aside entry back (after fixing what made it fail); it is validated again. */
  retryFailed(file: string): void {
    const failed = join(this.#deps.dir, FAILED);
    const reasonPath = join(failed, `${file}.reason.json`);
    const r = ReasonSchema.safeParse(parseJsonOrUndefined(readReason(reasonPath)));
    if (!r.success) throw new CniError(Code.NotFound, `delete queue: no failed entry ${file}`);
    const reason = r.data;
    if (!QUEUE_ENTRY_NAME_RE.test(reason.originalName)) {
      throw new CniError(
        Code.InvalidConfig,
        `delete queue: ${file} was not written by ferry-cni ("${reason.originalName}"); it cannot be retried`,
      );
    }
    const target = join(this.#deps.dir, reason.originalName);
    if (existsSync(target)) {
      throw new CniError(
        Code.AttachmentConflict,
        `delete queue: a newer DEL of the same attachment is pending (${reason.originalName}); it will be applied instead`,
      );
    }
    try {
      renameSync(join(failed, file), target);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        throw new CniError(Code.NotFound, `delete queue: no failed entry ${file}`);
      }
      throw err;
    }
    unlinkSync(reasonPath);
    this.#deps.log.info({ entry: reason.originalName }, 'failed delete queue entry put back');
    this.drainSoon();
  }
}

/** A reason file's text, or undefined when it cannot be read as one. */
function readReason(path: string): string | undefined {
  try {
    return readSmallFile(path, 4096);
  } catch {
    return undefined;
  }
}

/** Reads and validates one entry file; throws with the reason it cannot be applied. */
function readEntry(path: string): QueueEntry {
  const text = readSmallFile(path, QUEUE_ENTRY_MAX_BYTES);
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new Error(`not JSON: ${(err as Error).message}`);
  }
  const r = QueueEntrySchema.safeParse(doc);
  if (!r.success) {
    throw new Error(`invalid entry: ${describeFirstIssue(r.error)}`);
  }
  return r.data;
}
