/**
 * Chooses the peer source (a watch on Kubernetes Nodes when `cluster.kubernetes` is set, else the static
 * list) and builds the cluster controller on the node's namespace.
 *
 * The Kubernetes source is handed in, loaded by the caller only when it is wanted: its client library
 * doubles ferryd's bundle, start-up time and memory, which a node on a static list never needs.
 */
import { type Ip, SELF } from '@ferry/net';
import { nodeRunner } from '@ferry/net/node-runner';
import type { ClusterConfig, FerrydConfig } from '@ferry/shared-types/config/ferryd';
import type { Logger } from 'pino';
import { ClusterController } from './controller';
import { egressStep } from './egress';
import type { createKubePeerSource } from './kube-source';
import { StaticPeerSource } from './static-source';

export function buildCluster(
  config: FerrydConfig,
  cluster: ClusterConfig,
  ip: Ip,
  log: Logger,
  now: () => number,
  kubeSource: typeof createKubePeerSource | undefined,
): ClusterController {
  if (cluster.kubernetes && !kubeSource)
    throw new Error('cluster.kubernetes is set but the Kubernetes source was not loaded');
  const ownPodCIDRs =
    cluster.podCIDRs ??
    config.networks.flatMap((n) => [n.ipv4?.subnet, n.ipv6?.subnet].filter((s): s is string => s !== undefined));
  return new ClusterController({
    config: cluster,
    ownPodCIDRs,
    source:
      kubeSource && cluster.kubernetes
        ? kubeSource({
            ...(cluster.kubernetes.kubeconfig ? { kubeconfig: cluster.kubernetes.kubeconfig } : {}),
            // The config check requires a node name whenever `kubernetes` is set.
            nodeName: cluster.nodeName ?? '',
            log: log.child({ component: 'kube-source' }),
          })
        : new StaticPeerSource(cluster.peers, cluster.nodeName),
    egress: egressStep(cluster.masquerade, { podCIDRs: ownPodCIDRs, clusterCIDRs: cluster.clusterCIDRs }, nodeRunner),
    ip,
    ns: SELF,
    log: log.child({ component: 'cluster' }),
    now,
  });
}
