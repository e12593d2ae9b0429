/**
 * Cluster IPAM's parts on this node, built when some network's pool is a range split into blocks: the
 * IPBlock informer, the block manager over it, and what routing reads of both (the peers' valid blocks,
 * this node's). Loaded by daemon.ts only then: it brings the Kubernetes client library (cluster/build.ts
 * says what that costs).
 */
import { blockNameOf } from '@ferry/shared-types/kube/ipam';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { PeerBlocks } from '../../cluster/block-peers';
import type { OwnBlocks } from '../../cluster/controller';
import { loadKubeConfig } from '../../kube/connection';
import { IpamApi } from '../../kube/ipam-api';
import type { PodCache } from '../../pods/pod-cache';
import { nicsOf } from '../../pods/pod-intent';
import type { BlockStore } from '../../store/blocks';
import type { Db } from '../../store/db';
import type { PoolStore } from '../../store/pools';
import { addressOf, StaticClaims } from '../claims/static-claims';
import type { Ipam } from '../ipam';
import { ReclaimerService } from '../reclaimer-service';
import { kubeBlockView, kubeIpamPorts } from './kube-blocks';
import { BlockManager } from './manager';
import { blockMetrics } from './metrics';

/** How often claims no pod holds or asks for any more are given back. */
const CLAIM_RELEASE_EVERY_MS = 2000;

export interface BlockServicesOptions {
  kubeconfig?: string;
  nodeName: string;
  /** How often the reclaimer, while this ferryd leads it, looks over the cluster (`cluster.reclaimSec`). */
  reclaimMs: number;
  db: Db;
  ipam: Ipam;
  pools: PoolStore;
  blocks: BlockStore;
  pendingOf?: (network: string) => number;
  foreignPodCIDRs?: () => readonly string[];
  /** Static addresses: whether a namespace may have an address (tenancy.ts). */
  mayHave(address: string, namespace: string): boolean;
  /** The pod cache, once built (static addresses are claimed ahead from it). */
  podCache(): PodCache | undefined;
  /** The static addresses of each pod's interfaces (store/attachments.ts staticAddresses). */
  staticAddressesHeld(): readonly { json: string; pod_namespace: string | null; pod_name: string | null }[];
  log: Logger;
  now: () => number;
}

export interface BlockServices {
  manager: BlockManager;
  /** Static addresses claimed cluster-wide (IPClaims). */
  claims: StaticClaims;
  /** The cluster-wide job (blocks and claims of nodes that are gone), run while this ferryd leads. */
  reclaimer: ReclaimerService;
  /** Routing: every other node's valid blocks of networks whose pods are routed (InfraNIC). */
  peers: PeerBlocks;
  /** Routing: this node's blocks of those networks. */
  own: OwnBlocks;
  /** ferry_ipam_blocks, ferry_ipam_block_claims_total and the rest (metrics.ts). */
  registerMetrics(registry: Registry): void;
  start(): void;
  stop(): Promise<void>;
}

export function buildBlockServices(opts: BlockServicesOptions): BlockServices {
  const log = opts.log.child({ component: 'blocks' });
  const kc = loadKubeConfig(opts.kubeconfig);
  const api = new IpamApi({ kc });
  const cache = api.blockCache(log);
  const view = kubeBlockView(cache);
  const metrics = blockMetrics();
  const ports = kubeIpamPorts(api, kc, opts.nodeName, cache);
  const claims = new StaticClaims({
    nodeName: opts.nodeName,
    api: ports.claims,
    store: opts.blocks,
    mayHave: opts.mayHave,
    pods: () => {
      const cache = opts.podCache();
      return { synced: cache?.hasSynced ?? false, get: (ns, name) => cache?.get(ns, name) };
    },
    heldByPods: () => {
      const out = new Map<string, Set<string>>();
      for (const r of opts.staticAddressesHeld()) {
        const key = `${r.pod_namespace}/${r.pod_name}`;
        const set = out.get(key) ?? new Set<string>();
        for (const a of JSON.parse(r.json) as { address: string }[]) set.add(addressOf(a.address));
        out.set(key, set);
      }
      return out;
    },
    primaryNetwork: opts.ipam.networks().find((n) => n.config.infraNIC)?.config.name ?? '',
    log,
    now: opts.now,
  });
  let releaseTimer: NodeJS.Timeout | undefined;
  const manager = new BlockManager({
    nodeName: opts.nodeName,
    db: opts.db,
    ipam: opts.ipam,
    pools: opts.pools,
    blocks: opts.blocks,
    api: ports.blocks,
    view,
    nameOf: blockNameOf,
    ...(opts.pendingOf ? { pendingOf: opts.pendingOf } : {}),
    ...(opts.foreignPodCIDRs ? { foreignPodCIDRs: opts.foreignPodCIDRs } : {}),
    events: metrics.events,
    log,
    now: opts.now,
  });
  // Every ferryd in cluster-IPAM mode is a candidate for the one cluster-wide job (leader election).
  const reclaimer = new ReclaimerService({
    kc,
    api,
    nodeName: opts.nodeName,
    ranges: opts.ipam.networks().flatMap((n) =>
      n.pools.flatMap(({ spec }) =>
        spec.blocks
          ? [
              {
                network: spec.network,
                family: spec.family,
                cidr: spec.subnetText,
                blockPrefixLength: spec.blocks.prefix,
              },
            ]
          : [],
      ),
    ),
    blocks: cache,
    intervalMs: opts.reclaimMs,
    log,
  });
  const routed = new Set(
    opts.ipam
      .networks()
      .filter((n) => n.config.infraNIC)
      .map((n) => n.config.name),
  );
  return {
    manager,
    claims,
    reclaimer,
    peers: {
      routed: () =>
        view
          .blocks()
          .filter(
            (b) =>
              b.node !== opts.nodeName && routed.has(b.network) && manager.verdicts().get(b.name)?.isValid === true,
          ),
      onChange: (listener) => view.onChange(listener),
    },
    own: {
      cidrs: () => [...routed].flatMap((network) => manager.heldOf(network)),
      onChange: (listener) => manager.onHeldChanged(listener),
    },
    registerMetrics: (registry) => metrics.register(registry, manager),
    start() {
      log.info({ nodeName: opts.nodeName }, 'watching IPBlocks; claiming blocks of the ranges');
      cache.start();
      manager.start();
      reclaimer.start();
      opts.podCache()?.onChange((pod) => {
        try {
          claims.preClaim(pod, nicsOf(pod));
        } catch {
          // A malformed annotation: its ADD is refused, naming the problem; nothing to claim.
        }
      });
      let isReleasing = false;
      releaseTimer = setInterval(() => {
        if (isReleasing) return;
        isReleasing = true;
        claims
          .release()
          .catch((err: unknown) =>
            log.warn({ problem: (err as Error).message }, 'giving static addresses back failed; retrying'),
          )
          .finally(() => {
            isReleasing = false;
          });
      }, CLAIM_RELEASE_EVERY_MS);
      releaseTimer.unref();
    },
    async stop() {
      clearInterval(releaseTimer);
      await reclaimer.stop();
      await manager.stop();
      await cache.stop();
    },
  };
}
