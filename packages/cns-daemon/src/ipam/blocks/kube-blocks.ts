/**
 * The block manager's ports (ports.ts) over the Kubernetes API: IpamApi's IPBlock calls and its informer
 * (kube/ipam-api.ts), and this node's Node object, whose uid every block it claims carries as owner (the
 * garbage collector marks the node's blocks when it goes; the reclaimer frees them once its pods are).
 */
import type { IPBlock } from '@ferry/shared-types/kube/ipam';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { KubeApiError, toKubeApiError } from '../../kube/api-error';
import { callOptions } from '../../kube/connection';
import type { IpamApi } from '../../kube/ipam-api';
import type { ObjectCache } from '../../kube/object-cache';
import type { BlockApi, BlockView, ClusterBlock } from './ports';

const NODE_GET_TIMEOUT_MS = 10_000;

export function clusterBlockOf(b: IPBlock): ClusterBlock {
  return {
    name: b.metadata.name,
    uid: b.metadata.uid,
    network: b.spec.network,
    family: b.spec.family,
    cidr: b.spec.cidr,
    node: b.spec.node,
    isDeleting: b.metadata.deletionTimestamp !== undefined,
  };
}

/** createBlock/releaseBlock through IpamApi; the Node's uid is read once, at the first claim. */
export function kubeBlockApi(api: IpamApi, kc: KubeConfig, nodeName: string): BlockApi {
  const core = kc.makeApiClient(CoreV1Api);
  let nodeUid: Promise<string> | undefined;
  const uidOfNode = async (): Promise<string> => {
    try {
      const node = await core.readNode({ name: nodeName }, callOptions({ timeoutMs: NODE_GET_TIMEOUT_MS }));
      const uid = node.metadata?.uid;
      if (!uid) throw new KubeApiError('invalid', `get node ${nodeName}: the API server sent no uid`);
      return uid;
    } catch (err) {
      nodeUid = undefined;
      throw KubeApiError.is(err) ? err : toKubeApiError(err, `get node ${nodeName}`);
    }
  };
  return {
    async createBlock(claim) {
      nodeUid ??= uidOfNode();
      const r = await api.createBlock(claim, await nodeUid);
      return 'created' in r ? { created: clusterBlockOf(r.created) } : { exists: r.exists && clusterBlockOf(r.exists) };
    },
    // The release names the object by name and uid only (the delete's precondition).
    releaseBlock: (block) => api.releaseBlock({ metadata: { name: block.name, uid: block.uid, resourceVersion: '' } }),
  };
}

export function kubeBlockView(cache: ObjectCache<IPBlock>): BlockView {
  return {
    hasSynced: () => cache.hasSynced(),
    blocks: () => cache.list().map(clusterBlockOf),
    onChange: (listener) => {
      cache.onChange(listener);
    },
  };
}
