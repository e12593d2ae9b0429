/**
 * Whether ferryd can write its state. Any write that fails for a storage reason (storage/fault.ts) is
 * answered with StorageFailure naming the path and the cause, counted, and turns readiness off. Ready
 * comes back only through a probe, every second while failing, never through a request that happened
 * to succeed: after a failed transaction the tail of the WAL already has its blocks, so a small write can
 * succeed on a disk that is still full, and readiness would flap. The probe wants what a real write
 * wants: room on the filesystem (MIN_FREE_BYTES, by statfs), a writable directory, and a write to the
 * database that commits. No write is refused up front meanwhile: SQLite rolls a failed one back whole,
 * and requests that fit still succeed.
 */
import { accessSync, constants, statfsSync } from 'node:fs';
import { dirname } from 'node:path';
import { CniError, Code } from '@ferry/shared-types/errors';
import type { Logger } from 'pino';
import { describeFault, type StorageCause, storageFaultOf } from './fault';

const PROBE_INTERVAL_MS = 1000;
/** About a hundred grouped requests' worth of WAL frames: less than this free and the next burst fails again. */
const MIN_FREE_BYTES = 1024 * 1024;
const RETRY_DETAILS =
  "transient: ferryd is fine once the filesystem can be written again; retry (docs/runbook.md, 'Disk full or read-only')";

export interface StorageFailing {
  /** The latest failed operation, e.g. allocate, release, apply queued DEL. */
  operation: string;
  path: string;
  cause: StorageCause;
  code: string;
  /** When the failing began (the first failure since storage last worked). */
  sinceMs: number;
  /** The latest error message, as answered. */
  message: string;
}

export interface StorageHealthDeps {
  database: string;
  log: Logger;
  now: () => number;
  /** One small write transaction to the database; throws what SQLite throws. */
  probeWrite(): void;
  /** Counts one failure (ferry_storage_errors_total). */
  count(operation: string, cause: StorageCause): void;
  /** Tests: how often to probe (default 1 s) and how much room counts as enough (default 1 MiB). */
  probeIntervalMs?: number;
  minFreeBytes?: number;
}

export class StorageHealth {
  readonly #deps: StorageHealthDeps;
  #failing: StorageFailing | undefined;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  #recovered: () => void = () => undefined;

  constructor(deps: StorageHealthDeps) {
    this.#deps = deps;
  }

  /** `listener` is called each time storage works again (queued DELs that waited are applied then). */
  onRecovered(listener: () => void): void {
    this.#recovered = listener;
  }

  /** Set while storage is failing: what failed, where, since when. */
  get failing(): StorageFailing | undefined {
    return this.#failing;
  }

  /**
   * The catalog error for `err` when it is a storage failure (counted, logged, readiness off until a
   * probe succeeds); undefined when it is anything else.
   */
  errorOf(err: unknown, operation: string): CniError | undefined {
    const fault = storageFaultOf(err);
    if (!fault) return undefined;
    const path = fault.path ?? this.#deps.database;
    const message = `${operation}: ferryd cannot write ${fault.path ? path : `its database ${path}`}: ${describeFault(fault)}`;
    this.#deps.count(operation, fault.cause);
    const before = this.#failing;
    this.#failing = {
      operation,
      path,
      cause: fault.cause,
      code: fault.code,
      sinceMs: before?.sinceMs ?? this.#deps.now(),
      message,
    };
    // One line at error when it starts or changes; repeats (every request while the disk is full) at debug.
    if (!before) this.#deps.log.error({ err, operation, path }, `storage failing, not ready: ${message}`);
    else if (before.path !== path || before.code !== fault.code)
      this.#deps.log.error({ err, operation, path }, `storage failing: ${message}`);
    else this.#deps.log.debug({ operation, path, code: fault.code }, 'storage still failing');
    this.#scheduleProbe();
    return new CniError(Code.StorageFailure, message, RETRY_DETAILS, { cause: err });
  }

  /** One probe; true when storage works (again). Runs by itself every second while failing. */
  probe(): boolean {
    const f = this.#failing;
    if (!f) return true;
    const minFree = this.#deps.minFreeBytes ?? MIN_FREE_BYTES;
    try {
      for (const dir of new Set([dirname(f.path), dirname(this.#deps.database)])) {
        const fs = statfsSync(dir);
        if (fs.bavail * fs.bsize < minFree) return false;
        accessSync(dir, constants.W_OK);
      }
      this.#deps.probeWrite();
    } catch (err) {
      this.#deps.log.debug({ err }, 'storage probe failed');
      return false;
    }
    this.#failing = undefined;
    this.#stopProbe();
    this.#deps.log.info(
      { path: f.path, failedForMs: this.#deps.now() - f.sinceMs },
      `storage writable again: ready (it was failing with ${f.code})`,
    );
    this.#recovered();
    return true;
  }

  /** No more probes (ferryd stops; the database closes next). */
  stop(): void {
    this.#stopped = true;
    this.#stopProbe();
  }

  #scheduleProbe(): void {
    if (this.#timer || this.#stopped) return;
    this.#timer = setInterval(() => this.probe(), this.#deps.probeIntervalMs ?? PROBE_INTERVAL_MS);
    this.#timer.unref();
  }

  #stopProbe(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
