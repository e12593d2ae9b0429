/**
 * Which devices of Ferry's resources the kubelet allocated to a pod: its pod-resources API
 * (podresources/v1 List on `<kubeletDir>/pod-resources/kubelet.sock`, GA since Kubernetes 1.28), as
 * Multus reads it for the device plugins it delegates to. The kubelet allocates at admission, before the
 * sandbox (and so the ADD) exists, so the answer is there when the ADD asks. List rather than Get: Get is
 * behind a feature gate (KubeletPodResourcesGet) that clusters do not have on.
 */

import { CniError, Code } from '@ferry/shared-types/errors';
import type { Client, ServiceDefinition } from '@grpc/grpc-js';
import { clientOf, type ListPodResourcesResponse, protos, unary } from './protos';
import { type KubeletAllocation, resourceOf } from './served';

export class PodResourcesClient {
  readonly #socket: string;
  readonly #timeoutMs: number;
  readonly #served: ReadonlySet<string>;
  readonly #service: ServiceDefinition;
  #client: Client | undefined;

  constructor(socket: string, timeoutMs: number, served: ReadonlySet<string>) {
    this.#socket = socket;
    this.#timeoutMs = timeoutMs;
    this.#served = served;
    this.#service = protos.podResources();
  }

  /**
   * The pod's devices of served groups, over all its containers (init containers' devices are reused by
   * the others). CniError TryAgainLater when the kubelet does not answer in time: the kubelet retries.
   */
  async allocationOf(namespace: string, name: string): Promise<KubeletAllocation> {
    this.#client ??= clientOf(this.#service, this.#socket);
    let res: ListPodResourcesResponse;
    try {
      res = await unary<ListPodResourcesResponse>(this.#client, this.#service, 'List', {}, this.#timeoutMs);
    } catch (err) {
      const reason = (err as { details?: string }).details ?? (err as Error).message;
      throw new CniError(
        Code.TryAgainLater,
        `ask the kubelet which devices pod ${namespace}/${name} was allocated (pod-resources List on ${this.#socket}): ${reason}`,
      );
    }
    const byGroup = new Map<string, Set<string>>();
    for (const pod of res.podResources) {
      if (pod.namespace !== namespace || pod.name !== name) continue;
      for (const c of pod.containers) {
        for (const d of c.devices) {
          const group = [...this.#served].find((g) => resourceOf(g) === d.resourceName);
          if (group === undefined) continue;
          const ids = byGroup.get(group) ?? new Set<string>();
          for (const id of d.deviceIds) ids.add(id);
          byGroup.set(group, ids);
        }
      }
    }
    return new Map([...byGroup].map(([g, ids]) => [g, [...ids]]));
  }

  close(): void {
    this.#client?.close();
    this.#client = undefined;
  }
}
