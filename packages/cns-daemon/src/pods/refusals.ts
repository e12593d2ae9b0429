/**
 * What an operator sees when a pod asks for what the node cannot or may not give: each pod's last refused
 * ADD (shown by `ferryctl pods`, until an ADD of the pod succeeds or the pod leaves the node), a count by
 * reason (the metric), and a log line. The kubelet shows the same message in the pod's events. Memory
 * only: a refusal is about a request, which the runtime repeats.
 */
import type { PodRef } from '@ferry/shared-types/api/common';
import { CniError, Code } from '@ferry/shared-types/errors';
import type { Logger } from 'pino';
import { PodNicRefusal, type RefusalReason } from '../attachments/pod-nic-refusal';
import { podKeyOf } from './pod';

/** Pods remembered at most (a node runs a few hundred); the oldest refusal goes first. */
const MAX_REMEMBERED = 1024;

export interface Refusal {
  at: string;
  code: number;
  reason: RefusalReason;
  msg: string;
}

export class NicRefusals {
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #last = new Map<string, Refusal>();
  readonly counts: Record<RefusalReason, number> = { malformed: 0, unknown: 0, 'not-allowed': 0, unavailable: 0 };

  constructor(log: Logger, now: () => number = Date.now) {
    this.#log = log;
    this.#now = now;
  }

  /** An ADD of `pod` failed with `err`: kept when it refused the pod's delegated NICs. */
  note(pod: PodRef | undefined, err: unknown): void {
    const reason = reasonOf(err);
    if (!reason || !(err instanceof CniError) || !pod?.namespace || !pod.name) return;
    const key = podKeyOf(pod.namespace, pod.name);
    this.counts[reason] += 1;
    this.#last.delete(key);
    if (this.#last.size >= MAX_REMEMBERED) this.#last.delete(this.#last.keys().next().value as string);
    this.#last.set(key, { at: new Date(this.#now()).toISOString(), code: err.code, reason, msg: err.message });
    this.#log.warn({ pod: key, reason, code: err.code, problem: err.message }, 'delegated NICs refused');
  }

  /** An ADD of the pod succeeded, or the pod left: nothing to show any more. */
  clear(namespace: string, name: string): void {
    this.#last.delete(podKeyOf(namespace, name));
  }

  of(namespace: string, name: string): Refusal | undefined {
    return this.#last.get(podKeyOf(namespace, name));
  }
}

/** Why an ADD's error refused the pod's NICs; undefined for any other failure. */
function reasonOf(err: unknown): RefusalReason | undefined {
  if (err instanceof PodNicRefusal) return err.reason;
  // The annotation did not parse (pod-intent.ts).
  return err instanceof CniError && err.code === Code.InvalidPodIntent ? 'malformed' : undefined;
}
