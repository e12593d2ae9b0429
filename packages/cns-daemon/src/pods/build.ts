/**
 * ferryd's view of its node's pods, built when `cluster.kubernetes.pods` is set: a watch on Pods with
 * spec.nodeName = this node feeding the pod cache, the intent read from a pod's annotation, and (unless
 * turned off) the network-status writer. Loaded by daemon.ts only when configured: it brings the
 * Kubernetes client library (cluster/build.ts says what that costs).
 *
 * What the allocation calls: `podIntent(pod)` before it chooses devices (from the cache, or a bounded GET;
 * code 11 when neither answers), `refusals` when it refuses them; and `statusWriter?.report(pod)` after
 * every commit or release of an attachment made for a pod (it only queues).
 */
import type { InterfaceRecord } from '@ferry/shared-types/api/endpoints';
import type { PodWatchConfig } from '@ferry/shared-types/config/ferryd';
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { BackoffOptions } from '../kube/backoff';
import { loadKubeConfig } from '../kube/connection';
import { Informer, type InformerStatus } from '../kube/informer';
import type { DeviceInfoOf } from './network-status';
import { kubePodApi } from './pod-api';
import { PodCache, type PodKey } from './pod-cache';
import { type PodIntent, podIntentOf } from './pod-intent';
import { NicRefusals } from './refusals';
import { NetworkStatusWriter, type PodName } from './status-writer';

export interface PodServicesOptions {
  /** A kubeconfig file; without it, the pod's service account. */
  kubeconfig?: string;
  nodeName: string;
  config: PodWatchConfig;
  /** ferryd's records (the status writer's source): of one pod, or of every attachment. */
  records(pod?: PodName): InterfaceRecord[];
  /** A delegated device's `device-info` (network-status). */
  deviceInfoOf?: DeviceInfoOf;
  /** How often the status writer compares every pod with the records. */
  resyncMs: number;
  log: Logger;
  /** The wait between attempts while the API server is away (the watch's and the writer's). */
  backoff?: BackoffOptions;
}

export interface PodWatchStatus extends InformerStatus {
  nodeName: string;
  /** The first list has been applied: the cache holds every pod of the node. */
  synced: boolean;
  pods: number;
}

export interface PodServices {
  cache: PodCache;
  /** Absent when `networkStatus` is off. */
  statusWriter: NetworkStatusWriter | undefined;
  /** What the pod asks for (pod-intent.ts); CniError InvalidPodIntent or TryAgainLater. */
  podIntent(pod: PodKey): Promise<PodIntent>;
  /** Each pod's last refused request for delegated NICs, and counts by reason. */
  refusals: NicRefusals;
  status(): PodWatchStatus;
  /** Starts the watch (and the writer); never waits for the API server. */
  start(): void;
  stop(): Promise<void>;
}

/** Builds the pod services; StartupError for an unusable kubeconfig. Nothing talks to the API server until start(). */
export function buildPodServices(opts: PodServicesOptions): PodServices {
  const log = opts.log.child({ component: 'pods' });
  const kc = loadKubeConfig(opts.kubeconfig);
  const api = kubePodApi(kc);
  const cache = new PodCache({ api, lookupTimeoutMs: opts.config.lookupTimeoutMs, log });
  const fieldSelector = `spec.nodeName=${opts.nodeName}`;
  const informer = new Informer<V1Pod>(
    {
      kc,
      path: '/api/v1/pods',
      what: 'pods',
      fieldSelector,
      list: (client, options) => client.listPodForAllNamespaces({ fieldSelector }, options),
      log,
      ...(opts.backoff ? { backoff: opts.backoff } : {}),
    },
    {
      add: (pod) => cache.upsert(pod),
      update: (pod) => cache.upsert(pod),
      delete: (pod) => cache.remove(pod),
      // After the tick in which ListWatch applies the list's items.
      listed: () => setImmediate(() => cache.markSynced()),
    },
  );
  const statusWriter = opts.config.networkStatus
    ? new NetworkStatusWriter({
        cache,
        api,
        records: opts.records,
        ...(opts.deviceInfoOf ? { deviceInfoOf: opts.deviceInfoOf } : {}),
        log,
        resyncMs: opts.resyncMs,
        ...(opts.backoff ? { backoff: opts.backoff } : {}),
      })
    : undefined;
  return {
    cache,
    statusWriter,
    podIntent: (pod) => podIntentOf(cache, pod),
    refusals: new NicRefusals(log),
    status: () => ({
      nodeName: opts.nodeName,
      synced: cache.hasSynced,
      pods: cache.pods().length,
      ...informer.status(),
    }),
    start() {
      log.info(
        { nodeName: opts.nodeName, networkStatus: statusWriter !== undefined },
        'watching the pods of this node',
      );
      statusWriter?.start();
      informer.start();
    },
    async stop() {
      statusWriter?.stop();
      await informer.stop();
    },
  };
}
