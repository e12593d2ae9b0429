/**
 * The block manager's ports (ports.ts) over the Kubernetes API: IpamApi's IPBlock calls and its informer
 * (kube/ipam-api.ts), and this node's Node object, whose uid every block it claims carries as owner (the
 * garbage collector marks the node's blocks when it goes; the reclaimer frees them once its pods are).
 */
import {
  BlockCondition,
  type Condition,
  type IPBlock,
  type IPBlockStatus,
  type IPClaim,
} from '@ferry/shared-types/kube/ipam';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { KubeApiError, toKubeApiError } from '../../kube/api-error';
import { callOptions } from '../../kube/connection';
import type { IpamApi } from '../../kube/ipam-api';
import type { ObjectCache } from '../../kube/object-cache';
import type { ClaimApi, ClusterClaim } from '../claims/static-claims';
import type { BlockApi, BlockStatusWrite, BlockView, ClusterBlock } from './ports';

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

/** Blocks and static-address claims through IpamApi; the Node's uid is read once, at the first claim. */
export function kubeIpamPorts(
  api: IpamApi,
  kc: KubeConfig,
  nodeName: string,
  cache: ObjectCache<IPBlock>,
): { blocks: BlockApi; claims: ClaimApi } {
  const core = kc.makeApiClient(CoreV1Api);
  let node: Promise<{ uid: string; podCIDRs: string[] }> | undefined;
  const readOwnNode = async () => {
    try {
      const n = await core.readNode({ name: nodeName }, callOptions({ timeoutMs: NODE_GET_TIMEOUT_MS }));
      const uid = n.metadata?.uid;
      if (!uid) throw new KubeApiError('invalid', `get node ${nodeName}: the API server sent no uid`);
      return { uid, podCIDRs: n.spec?.podCIDRs ?? (n.spec?.podCIDR ? [n.spec.podCIDR] : []) };
    } catch (err) {
      node = undefined;
      throw KubeApiError.is(err) ? err : toKubeApiError(err, `get node ${nodeName}`);
    }
  };
  const ownNode = () => {
    node ??= readOwnNode();
    return node;
  };
  const uid = async () => (await ownNode()).uid;
  // A release names the object by name and uid only (the delete's precondition).
  const meta = (o: { name: string; uid: string }) => ({ metadata: { name: o.name, uid: o.uid, resourceVersion: '' } });
  return {
    blocks: {
      async createBlock(claim) {
        const r = await api.createBlock(claim, await uid());
        return 'created' in r
          ? { created: clusterBlockOf(r.created) }
          : { exists: r.exists && clusterBlockOf(r.exists) };
      },
      releaseBlock: (block) => api.releaseBlock(meta(block)),
      ownPodCIDRs: async () => (await ownNode()).podCIDRs,
      async writeStatus(block, status) {
        const current = cache.get(block.name);
        if (!current || current.metadata.uid !== block.uid) return;
        try {
          await api.updateBlockStatus(current, statusOf(current, status, new Date().toISOString()));
        } catch (err) {
          // Another writer in between: the next pass writes again, from the object as it is then.
          if (!KubeApiError.is(err) || err.kind !== 'conflict') throw err;
        }
      },
    },
    claims: {
      async createClaim(spec) {
        const r = await api.createClaim(spec, await uid());
        return 'created' in r
          ? { created: clusterClaimOf(r.created) }
          : { exists: r.exists && clusterClaimOf(r.exists) };
      },
      deleteClaim: (claim) => api.deleteClaim(meta(claim)),
    },
  };
}

/** The block's status with `write` in it: the Valid condition replaced (its transition time kept when unchanged). */
function statusOf(block: IPBlock, write: BlockStatusWrite, nowIso: string): IPBlockStatus {
  const conditions = block.status?.conditions ?? [];
  const status = write.valid.isValid ? 'True' : 'False';
  const before = conditions.find((c) => c.type === BlockCondition.Valid);
  const valid: Condition = {
    type: BlockCondition.Valid,
    status,
    reason: write.valid.reason,
    message: write.valid.message,
    lastTransitionTime: before?.status === status ? before.lastTransitionTime : nowIso,
    ...(block.metadata.generation !== undefined ? { observedGeneration: block.metadata.generation } : {}),
  };
  return {
    assigned: write.assigned,
    ...(block.metadata.generation !== undefined ? { observedGeneration: block.metadata.generation } : {}),
    conditions: [...conditions.filter((c) => c.type !== BlockCondition.Valid), valid],
  };
}

function clusterClaimOf(c: IPClaim): ClusterClaim {
  return { name: c.metadata.name, uid: c.metadata.uid, address: c.spec.address, node: c.spec.node, pod: c.spec.pod };
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
