/**
 * What a pod asks for in its `ferry.dev/nics` annotation, read from the pod cache (or the API server,
 * for a pod the watch has not delivered yet). What the node and the pod's namespace may give is decided
 * by the allocation that asks for it (allocations/allocate.ts); a malformed annotation is refused here, naming the pod, the
 * annotation and the problem.
 */
import { CniError, Code } from '@ferry/shared-types/errors';
import { POD_NICS_ANNOTATION, type PodNics, parsePodNics } from '@ferry/shared-types/kube/pod-nics';
import { type PodView, podKeyOf } from './pod';
import type { PodCache, PodKey } from './pod-cache';

/**
 * absent: the API server has no such pod (a static pod before the kubelet made its mirror, a pod
 * deleted meanwhile), so it asks for nothing. Otherwise the pod, and its NICs, or undefined when it has
 * no annotation (the network's `delegatedNICs` apply).
 */
export type PodIntent = { kind: 'absent' } | { kind: 'pod'; pod: PodView; nics: PodNics | undefined };

/** The intent of the pod `key` means. CniError InvalidPodIntent for a malformed annotation, TryAgainLater (lookup). */
export async function podIntentOf(cache: PodCache, key: PodKey): Promise<PodIntent> {
  const pod = await cache.lookup(key);
  if (!pod) return { kind: 'absent' };
  return { kind: 'pod', pod, nics: nicsOf(pod) };
}

/** The NICs `pod`'s annotation asks for; undefined without one; CniError InvalidPodIntent when malformed. */
export function nicsOf(pod: PodView): PodNics | undefined {
  const text = pod.annotations[POD_NICS_ANNOTATION];
  if (text === undefined) return undefined;
  const r = parsePodNics(text);
  if ('problem' in r) {
    throw new CniError(
      Code.InvalidPodIntent,
      `pod ${podKeyOf(pod.namespace, pod.name)}: annotation ${POD_NICS_ANNOTATION}: ${r.problem}`,
    );
  }
  return r.nics;
}
