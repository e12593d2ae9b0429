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
import { BlockPeerSource, type PeerBlocks } from './block-peers';
import { ClusterController, type OwnBlocks } from './controller';
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
  blocks?: { peers: PeerBlocks; own: OwnBlocks },
): ClusterController {
  if (cluster.kubernetes && !kubeSource)
    throw new Error('cluster.kubernetes is set but the Kubernetes source was not loaded');
  const pools = config.networks.flatMap((n) => [n.ipv4, n.ipv6].filter((p) => p !== undefined));
  // A cluster-IPAM range is the whole cluster's: this node's part of it is the blocks it holds.
  const ownPodCIDRs = cluster.podCIDRs ?? pools.filter((p) => !p.blocks).map((p) => p.subnet);
  const nodes =
    kubeSource && cluster.kubernetes
      ? kubeSource({
          ...(cluster.kubernetes.kubeconfig ? { kubeconfig: cluster.kubernetes.kubeconfig } : {}),
          // The config check requires a node name whenever `kubernetes` is set.
          nodeName: cluster.nodeName ?? '',
          log: log.child({ component: 'kube-source' }),
        })
      : new StaticPeerSource(cluster.peers, cluster.nodeName);
  // Egress leaves the node from its own pods, whichever block they are in: the ranges are their sources.
  const sources = [...ownPodCIDRs, ...pools.filter((p) => p.blocks).map((p) => p.subnet)];
  return new ClusterController({
    config: cluster,
    ownPodCIDRs,
    ...(blocks ? { ownBlocks: blocks.own } : {}),
    source: blocks ? new BlockPeerSource(nodes, blocks.peers) : nodes,
    egress: egressStep(cluster.masquerade, { podCIDRs: sources, clusterCIDRs: cluster.clusterCIDRs }, nodeRunner),
    ip,
    ns: SELF,
    log: log.child({ component: 'cluster' }),
    now,
  });
}
