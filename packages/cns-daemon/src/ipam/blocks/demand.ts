/**
 * Demand the pod watch shows before the ADDs arrive (the "Phase 3" CNS only plans): the pods scheduled
 * onto this node that will need an address of a network and have none yet. An InfraNIC network's: every
 * such pod without an attachment of it. A secondary network's: the pods whose `ferry.dev/nics` names the
 * network for a device without static addresses (the ones its pool addresses). Read by the block manager
 * once per pass: one walk of the pod cache and one read of the network's attachments.
 */
import type { NetworkConfig } from '@ferry/shared-types/config/ferryd';
import { POD_NICS_ANNOTATION, parsePodNics } from '@ferry/shared-types/kube/pod-nics';
import type { PodView } from '../../pods/pod';

/** The attachments of a network, as far as their pods go (store/attachments.ts). */
export interface NetworkAttachments {
  attachmentsOfNetwork(network: string): readonly { pod_namespace: string | null; pod_name: string | null }[];
}

export function pendingPodsOf(
  pods: readonly PodView[],
  net: NetworkConfig,
  attachmentStore: NetworkAttachments,
): number {
  const added = new Set(attachmentStore.attachmentsOfNetwork(net.name).map((a) => `${a.pod_namespace}/${a.pod_name}`));
  let n = 0;
  for (const pod of pods) {
    if (pod.needsNoAddress || added.has(`${pod.namespace}/${pod.name}`)) continue;
    if (net.infraNIC || asksPooled(pod, net.name)) n++;
  }
  return n;
}

function asksPooled(pod: PodView, network: string): boolean {
  const text = pod.annotations[POD_NICS_ANNOTATION];
  if (text === undefined) return false;
  const r = parsePodNics(text);
  return 'nics' in r && r.nics.some((nic) => nic.network === network && !nic.addresses);
}
