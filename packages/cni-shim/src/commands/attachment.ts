import type { AllocateRequest } from '@ferry/shared-types/api/allocations';
import type { PodRef } from '@ferry/shared-types/api/common';
import type { Endpoint, InterfaceRecord } from '@ferry/shared-types/api/endpoints';
import type { ShimConf } from '../config';
import type { CmdArgs } from '../env';

/** The pod this attachment is for, from CNI_ARGS (kubelet's K8S_POD_* keys). */
export function podOf(args: CmdArgs): PodRef {
  const a = args.args;
  return {
    ...(a.podNamespace ? { namespace: a.podNamespace } : {}),
    ...(a.podName ? { name: a.podName } : {}),
    ...(a.podUid ? { uid: a.podUid } : {}),
    ...(a.podInfraContainerId ? { infraContainerId: a.podInfraContainerId } : {}),
  };
}

/** The allocation request of an ADD: (network, containerId, ifName) plus what ferryd stores. */
export function attachmentOf(args: CmdArgs, conf: ShimConf): AllocateRequest {
  return {
    network: conf.name,
    containerId: args.containerId,
    ifName: args.ifName,
    netns: args.netns,
    pod: podOf(args),
    ...(conf.delegatedNICs ? { delegatedNICs: conf.delegatedNICs } : {}),
    ...(conf.runtimeConfig?.deviceID ? { deviceId: conf.runtimeConfig.deviceID } : {}),
  };
}

/** The interfaces of one attachment (network + CNI_IFNAME) in a container's endpoint. */
export function interfacesOf(ep: Endpoint | undefined, network: string, ifName: string): InterfaceRecord[] {
  return (ep?.interfaces ?? []).filter((i) => i.network === network && i.attachmentIfName === ifName);
}
