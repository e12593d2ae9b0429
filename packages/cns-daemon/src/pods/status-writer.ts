/**
 * Keeps each pod's `k8s.v1.cni.cncf.io/network-status` in line with ferryd's records, off every caller's
 * path: report(pod) only queues the pod; a few workers read the pod (from the cache, or the API server),
 * work out the annotation with Ferry's entries replaced (network-status.ts) and, when it differs,
 * merge-patch it with the pod's resourceVersion as the precondition, so another writer's change made
 * meanwhile is never overwritten (409: read the pod again and redo). A failure is retried with back-off;
 * when the pod watch lists again (the API server is back) everything waiting is tried at once. Reports of
 * one pod coalesce: a pod is written once for any number of reports while it waits.
 *
 * What the writer compares against is ferryd's records, so it needs no message to be right, only to be
 * quick: it also compares every pod the watch delivers (another writer may have dropped Ferry's entries)
 * and every pod of the node each `resyncMs` (a record changed without a report).
 */
import type { InterfaceRecord } from '@ferry/shared-types/api/endpoints';
import { NETWORK_STATUS_ANNOTATION } from '@ferry/shared-types/kube/network-status';
import type { Logger } from 'pino';
import { type BackoffOptions, backoffDelayMs, DEFAULT_BACKOFF } from '../kube/backoff';
import { describeApiError, httpStatusOfApiError } from '../kube/connection';
import { type DeviceInfoOf, ferryEntriesOf, withFerryEntries } from './network-status';
import { type PodView, podKeyOf } from './pod';
import type { PodApi } from './pod-api';
import type { PodCache } from './pod-cache';

/** Pods written at once: a node's burst of starting pods is written in parallel, the API server spared. */
const CONCURRENCY = 4;
const REQUEST_TIMEOUT_MS = 10_000;
/** Conflicts in a row on one pod before the write counts as failed (and waits its back-off). */
const MAX_CONFLICTS = 5;

/** The pod whose records changed. */
export interface PodName {
  namespace: string;
  name: string;
}

export interface StatusWriterOptions {
  cache: PodCache;
  api: PodApi;
  /** ferryd's records: of one pod's attachments, or (no argument) of every attachment. */
  records(pod?: PodName): InterfaceRecord[];
  /** A delegated device's `device-info` (its PCI address and PF's). */
  deviceInfoOf?: DeviceInfoOf;
  log: Logger;
  /** How often every pod of the node is compared with the records. */
  resyncMs: number;
  backoff?: BackoffOptions;
  now?: () => number;
}

/** Writes by outcome since start: the metric copies them. */
export interface StatusWriterCounts {
  /** PATCHes that changed the annotation. */
  written: number;
  /** PATCHes refused because the pod had changed since it was read (each is redone). */
  conflicts: number;
  /** Attempts that failed (the API server away, an error answer); each is retried. */
  failed: number;
  /** Pods gone before their write (nothing to write). */
  gone: number;
}

interface Pending {
  since: number;
  failures: number;
  notBefore: number;
  /** Reported again while its write was in flight: that write may have read older records. */
  again: boolean;
}

export class NetworkStatusWriter {
  readonly #opts: StatusWriterOptions;
  readonly #now: () => number;
  readonly #pending = new Map<string, Pending>();
  readonly #inFlight = new Set<string>();
  /**
   * The pod as our last write of it left it, and the version that write replaced: until the watch
   * delivers the write, a second pass for that pod reads this instead of the cache's older copy.
   */
  readonly #written = new Map<string, { replaced: string; pod: PodView }>();
  readonly counts: StatusWriterCounts = { written: 0, conflicts: 0, failed: 0, gone: 0 };
  #timer: NodeJS.Timeout | undefined;
  #resync: NodeJS.Timeout | undefined;
  #idle: (() => void)[] = [];
  #started = false;
  #stopped = false;

  constructor(opts: StatusWriterOptions) {
    this.#opts = opts;
    this.#now = opts.now ?? Date.now;
  }

  start(): void {
    if (this.#started) throw new Error('network-status writer: already started');
    this.#started = true;
    const { cache } = this.#opts;
    cache.onChange((pod) => this.#compare(pod, this.#recordsOf(pod)));
    cache.onSynced(() => {
      // A list after a failure means the API server answers again: nothing waits out its back-off.
      for (const p of this.#pending.values()) p.notBefore = this.#now();
      this.resync();
    });
    this.#resync = setInterval(() => this.resync(), this.#opts.resyncMs);
    this.#resync.unref();
  }

  /** Stops taking work; writes in flight finish (their answers are not waited for). */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    clearInterval(this.#resync);
  }

  /** The records of `pod` changed (an ADD committed, a DEL released): bring its annotation in line. */
  report(pod: PodName): void {
    this.#enqueue(podKeyOf(pod.namespace, pod.name));
  }

  /** Compares every pod of the node with the records and queues those that differ. */
  resync(): void {
    if (this.#stopped || !this.#opts.cache.hasSynced) return;
    const byPod = new Map<string, InterfaceRecord[]>();
    try {
      for (const r of this.#opts.records()) {
        if (r.pod.namespace === undefined || r.pod.name === undefined) continue;
        const key = podKeyOf(r.pod.namespace, r.pod.name);
        const list = byPod.get(key);
        if (list) list.push(r);
        else byPod.set(key, [r]);
      }
    } catch (err) {
      this.#opts.log.warn({ err }, 'network-status: cannot read the records; the next resync tries again');
      return;
    }
    for (const pod of this.#opts.cache.pods()) this.#compare(pod, byPod.get(podKeyOf(pod.namespace, pod.name)) ?? []);
  }

  /** Pods waiting to be written, and how long the oldest has waited. */
  pending(): { pods: number; oldestSec: number } {
    // One reading of the clock: two could straddle a tick and report an empty queue as 1 ms old.
    const now = this.#now();
    let oldest = now;
    for (const p of this.#pending.values()) oldest = Math.min(oldest, p.since);
    return { pods: this.#pending.size, oldestSec: (now - oldest) / 1000 };
  }

  /** Resolves once nothing is waiting or in flight (tests). */
  idle(): Promise<void> {
    if (this.#pending.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #recordsOf(pod: PodName): InterfaceRecord[] {
    try {
      return this.#opts.records(pod);
    } catch (err) {
      this.#opts.log.warn({ err, pod: podKeyOf(pod.namespace, pod.name) }, 'network-status: cannot read the records');
      return [];
    }
  }

  #entriesOf(records: readonly InterfaceRecord[], pod: PodView) {
    return ferryEntriesOf(records, pod, this.#opts.deviceInfoOf);
  }

  #compare(pod: PodView, records: InterfaceRecord[]): void {
    if (withFerryEntries(pod.annotations[NETWORK_STATUS_ANNOTATION], this.#entriesOf(records, pod))) {
      this.#enqueue(podKeyOf(pod.namespace, pod.name));
    }
  }

  #enqueue(key: string): void {
    if (this.#stopped) return;
    const p = this.#pending.get(key);
    if (!p) {
      const now = this.#now();
      this.#pending.set(key, { since: now, failures: 0, notBefore: now, again: false });
    } else if (this.#inFlight.has(key)) {
      p.again = true;
    }
    this.#pump();
  }

  #pump(): void {
    if (this.#stopped) return;
    clearTimeout(this.#timer);
    const now = this.#now();
    let next = Number.POSITIVE_INFINITY;
    for (const [key, p] of this.#pending) {
      if (this.#inFlight.size >= CONCURRENCY) break;
      if (this.#inFlight.has(key)) continue;
      if (p.notBefore > now) {
        next = Math.min(next, p.notBefore);
        continue;
      }
      this.#inFlight.add(key);
      void this.#run(key, p);
    }
    if (next !== Number.POSITIVE_INFINITY) {
      this.#timer = setTimeout(() => this.#pump(), next - now);
      this.#timer.unref();
    }
  }

  async #run(key: string, p: Pending): Promise<void> {
    let failure: string | undefined;
    try {
      await this.#write(key);
    } catch (err) {
      failure = describeApiError(err);
    }
    this.#inFlight.delete(key);
    if (failure === undefined && !p.again) {
      this.#pending.delete(key);
      this.#written.delete(key);
    } else if (failure === undefined) {
      p.again = false;
    } else {
      this.counts.failed += 1;
      p.failures += 1;
      p.again = false;
      const retryInMs = backoffDelayMs(p.failures, this.#opts.backoff ?? DEFAULT_BACKOFF);
      p.notBefore = this.#now() + retryInMs;
      this.#opts.log.warn(
        { pod: key, problem: failure, failures: p.failures, retryInMs },
        'network-status: write failed; retrying',
      );
    }
    if (this.#pending.size === 0) for (const resolve of this.#idle.splice(0)) resolve();
    this.#pump();
  }

  /** One pod: read, compare, patch; a conflict reads the pod again. Throws what should be retried later. */
  async #write(key: string): Promise<void> {
    const slash = key.indexOf('/');
    const namespace = key.slice(0, slash);
    const name = key.slice(slash + 1);
    const { cache, api, log } = this.#opts;
    const cached = cache.get(namespace, name);
    const written = this.#written.get(key);
    let pod =
      written && cached?.resourceVersion === written.replaced
        ? written.pod
        : (cached ?? (await cache.fetch(namespace, name, REQUEST_TIMEOUT_MS)));
    for (let conflicts = 0; ; ) {
      if (!pod) {
        this.counts.gone += 1;
        return;
      }
      const change = withFerryEntries(
        pod.annotations[NETWORK_STATUS_ANNOTATION],
        this.#entriesOf(this.#opts.records({ namespace, name }), pod),
      );
      if (!change) return;
      if (change.unreadable) {
        log.warn(
          { pod: key, problem: change.unreadable, old: pod.annotations[NETWORK_STATUS_ANNOTATION]?.slice(0, 200) },
          `network-status: the pod's ${NETWORK_STATUS_ANNOTATION} is not a network-status list; replacing it`,
        );
      }
      try {
        const after = await api.patchMetadata(
          namespace,
          name,
          { resourceVersion: pod.resourceVersion, annotations: { [NETWORK_STATUS_ANNOTATION]: change.value } },
          REQUEST_TIMEOUT_MS,
        );
        this.#written.set(key, { replaced: pod.resourceVersion, pod: after });
        this.counts.written += 1;
        log.debug({ pod: key, networkStatus: change.value }, 'network-status written');
        return;
      } catch (err) {
        const status = httpStatusOfApiError(err);
        if (status === 404) {
          this.counts.gone += 1;
          return;
        }
        if (status !== 409) throw err;
        this.counts.conflicts += 1;
        conflicts += 1;
        if (conflicts >= MAX_CONFLICTS) throw new Error(`pod ${key} changed under ${MAX_CONFLICTS} writes in a row`);
        pod = await cache.fetch(namespace, name, REQUEST_TIMEOUT_MS);
      }
    }
  }
}
