/** The operator API's view of the pod watch (GET /v1/operator/pods) and of one pod's intent. */
import type { PodReport, PodsReport } from '@ferry/shared-types/api/pods';
import { CniError, Code } from '@ferry/shared-types/errors';
import type { PodServices } from './build';
import { type PodView, podKeyOf } from './pod';
import type { PodKey } from './pod-cache';
import { nicsOf } from './pod-intent';

export function podsReport(pods: PodServices): PodsReport {
  const { nodeName, synced, lastSync, watchRestarts, lastError } = pods.status();
  const writer = pods.statusWriter;
  const pending = writer?.pending();
  return {
    nodeName,
    watch: { synced, lastSync, watchRestarts, lastError },
    ...(writer && pending
      ? { networkStatus: { pending: pending.pods, oldestPendingSec: pending.oldestSec, ...writer.counts } }
      : {}),
    pods: pods.cache
      .pods()
      .sort((a, b) => (podKeyOf(a.namespace, a.name) < podKeyOf(b.namespace, b.name) ? -1 : 1))
      .map((pod) => reportOf(pods, pod, 'cache')),
  };
}

/** One pod, as an ADD of it would find it: from the cache, or the API server (bounded; code 11). */
export async function podReport(pods: PodServices, key: PodKey): Promise<PodReport> {
  const cached = pods.cache.get(key.namespace, key.name);
  const pod = await pods.cache.lookup(key);
  if (!pod) {
    throw new CniError(
      Code.NotFound,
      `pod ${podKeyOf(key.namespace, key.name)}: the Kubernetes API has no such pod${key.uid ? ` (uid ${key.uid})` : ''}`,
    );
  }
  return reportOf(pods, pod, cached === pod ? 'cache' : 'api');
}

function reportOf(pods: PodServices, pod: PodView, source: PodReport['source']): PodReport {
  const refused = pods.refusals.of(pod.namespace, pod.name);
  const base = {
    namespace: pod.namespace,
    name: pod.name,
    uid: pod.uid,
    resourceVersion: pod.resourceVersion,
    source,
    ...(refused ? { refused } : {}),
  };
  try {
    const nics = nicsOf(pod);
    return { ...base, ...(nics ? { nics } : {}) };
  } catch (err) {
    if (!(err instanceof CniError)) throw err;
    return { ...base, problem: err.message };
  }
}
