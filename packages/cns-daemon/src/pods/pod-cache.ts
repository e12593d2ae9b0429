/**
 * The pods of this node as ferryd knows them: fed by a watch on Pods with spec.nodeName = this node
 * (build.ts connects the Informer), answered from memory. A pod the watch has not delivered yet (ADD can
 * come before the watch event of a pod just bound) is asked of the API server directly, retried while it
 * is away, for a bounded time; then the question fails with code 11 and the runtime tries again.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { CniError, Code } from '@ferry/shared-types/errors';
import type { Logger } from 'pino';
import { backoffDelayMs } from '../kube/backoff';
import { describeApiError, httpStatusOfApiError } from '../kube/connection';
import { isPodWithUid, type PodView, podKeyOf, podViewOf } from './pod';
import type { PodApi } from './pod-api';

export interface PodCacheOptions {
  api: PodApi;
  /** The longest lookup() asks the API server for a pod the cache does not hold. */
  lookupTimeoutMs: number;
  log: Logger;
  now?: () => number;
}

/** Which pod is meant: the runtime's K8S_POD_NAMESPACE, K8S_POD_NAME and (when given) K8S_POD_UID. */
export interface PodKey {
  namespace: string;
  name: string;
  uid?: string;
}

/** How lookups were answered, for the metric. */
export interface LookupCounts {
  cache: number;
  api: number;
  absent: number;
  unavailable: number;
}

/** Retries of a GET while the API server is away: quick at first, never past the deadline. */
const LOOKUP_RETRY = { initialMs: 100, maxMs: 1000 };
/** 401 and 403 do not heal within a lookup's seconds: the answer comes at once. */
const FINAL_STATUSES = new Set([401, 403]);

export class PodCache {
  readonly #opts: PodCacheOptions;
  readonly #now: () => number;
  readonly #pods = new Map<string, PodView>();
  readonly #changed = new Set<(pod: PodView) => void>();
  readonly #synced = new Set<() => void>();
  readonly #inflight = new Map<string, Promise<PodView | undefined>>();
  readonly counts: LookupCounts = { cache: 0, api: 0, absent: 0, unavailable: 0 };
  #hasSynced = false;

  constructor(opts: PodCacheOptions) {
    this.#opts = opts;
    this.#now = opts.now ?? Date.now;
  }

  /** A pod was added or changed (a watch event, or an item of a list). */
  upsert(object: unknown): void {
    const r = podViewOf(object);
    if ('problem' in r) {
      this.#opts.log.warn({ problem: r.problem }, 'skip malformed Pod object');
      return;
    }
    const key = podKeyOf(r.pod.namespace, r.pod.name);
    this.#pods.set(key, r.pod);
    for (const fn of this.#changed) fn(r.pod);
  }

  /** A pod was deleted (or left this node's view at a relist). */
  remove(object: unknown): void {
    const r = podViewOf(object);
    if ('pod' in r) this.#pods.delete(podKeyOf(r.pod.namespace, r.pod.name));
  }

  /** A list has been applied: the cache holds every pod of the node as of that list. */
  markSynced(): void {
    this.#hasSynced = true;
    for (const fn of this.#synced) fn();
  }

  /** True once the first list has been applied. */
  get hasSynced(): boolean {
    return this.#hasSynced;
  }

  /** Calls `fn` after every pod added or changed. */
  onChange(fn: (pod: PodView) => void): void {
    this.#changed.add(fn);
  }

  /** Calls `fn` after every list applied (the first, and each relist: after a 410, the API server back). */
  onSynced(fn: () => void): void {
    this.#synced.add(fn);
  }

  /** The pod as the watch last delivered it. */
  get(namespace: string, name: string): PodView | undefined {
    return this.#pods.get(podKeyOf(namespace, name));
  }

  pods(): PodView[] {
    return [...this.#pods.values()];
  }

  /**
   * The pod the runtime means: from the cache when it holds that pod (the API server may be away), else
   * from the API server. Undefined when the API server has no such pod (none of that name, or one with
   * another UID: the pod meant is gone). CniError TryAgainLater when neither answers within
   * lookupTimeoutMs.
   */
  async lookup(key: PodKey): Promise<PodView | undefined> {
    const cached = this.#cached(key);
    if (cached) {
      this.counts.cache += 1;
      return cached;
    }
    // Two ADDs for one pod (its attachments on two networks) share one question.
    const id = `${podKeyOf(key.namespace, key.name)}/${key.uid ?? ''}`;
    const pending = this.#inflight.get(id);
    if (pending) return pending;
    const asked = this.#ask(key).finally(() => this.#inflight.delete(id));
    this.#inflight.set(id, asked);
    return asked;
  }

  /** One GET, without the cache and without retries (the status writer re-reads a pod after a conflict). */
  fetch(namespace: string, name: string, timeoutMs: number): Promise<PodView | undefined> {
    return this.#opts.api.get(namespace, name, timeoutMs);
  }

  #cached(key: PodKey): PodView | undefined {
    const pod = this.get(key.namespace, key.name);
    return pod && isPodWithUid(pod, key.uid) ? pod : undefined;
  }

  async #ask(key: PodKey): Promise<PodView | undefined> {
    const { lookupTimeoutMs } = this.#opts;
    const deadline = this.#now() + lookupTimeoutMs;
    let lastError = 'no answer';
    let isFinal = false;
    for (let attempt = 1; ; attempt++) {
      const left = deadline - this.#now();
      if (left <= 0) break;
      try {
        const pod = await this.#opts.api.get(key.namespace, key.name, left);
        if (pod && isPodWithUid(pod, key.uid)) {
          this.counts.api += 1;
          return pod;
        }
        this.counts.absent += 1;
        return undefined;
      } catch (err) {
        lastError = describeApiError(err);
        isFinal = FINAL_STATUSES.has(httpStatusOfApiError(err) ?? 0);
        if (isFinal) break;
      }
      // The watch may deliver the pod while we wait.
      await sleep(Math.min(backoffDelayMs(attempt, LOOKUP_RETRY), Math.max(0, deadline - this.#now())));
      const delivered = this.#cached(key);
      if (delivered) {
        this.counts.cache += 1;
        return delivered;
      }
    }
    this.counts.unavailable += 1;
    const why = isFinal ? lastError : `the Kubernetes API did not answer within ${lookupTimeoutMs} ms (${lastError})`;
    throw new CniError(Code.TryAgainLater, `look up pod ${podKeyOf(key.namespace, key.name)}: ${why}; try again later`);
  }
}
