/**
 * The two calls ferryd makes on one Pod: GET it, and merge-patch its metadata through the pod's status
 * subresource (`pods/status`, as the NPWG reference client writes network-status): there the API server
 * keeps the pod's spec whatever a patch says, so the RBAC rule ferryd needs cannot rewrite a pod's images
 * or commands, as `patch pods` could. Behind an interface so the cache and the status writer can be
 * tested with a fake; kubePodApi is the real one.
 */
import { CniError, Code } from '@ferry/shared-types/errors';
import { CoreV1Api, type KubeConfig, PatchStrategy } from '@kubernetes/client-node';
import { callOptions, httpStatusOfApiError } from '../kube/connection';
import { type PodView, podKeyOf, podViewOf } from './pod';

/** A merge patch of metadata: a resourceVersion (the precondition), annotations to set or (null) remove. */
export interface MetadataPatch {
  resourceVersion: string;
  annotations: Record<string, string | null>;
}

export interface PodApi {
  /** The pod, or undefined when the API server has none (404). Throws on any other failure. */
  get(namespace: string, name: string, timeoutMs: number): Promise<PodView | undefined>;
  /**
   * Applies `patch` to `pods/status` as a JSON merge patch (RFC 7386), so a stale resourceVersion is
   * refused with 409 instead of overwriting another writer's change. Throws the client's error
   * (httpStatusOfApiError).
   */
  patchMetadata(namespace: string, name: string, patch: MetadataPatch, timeoutMs: number): Promise<PodView>;
}

export function kubePodApi(kc: KubeConfig): PodApi {
  const api = kc.makeApiClient(CoreV1Api);
  return {
    async get(namespace, name, timeoutMs) {
      try {
        return viewOf(await api.readNamespacedPod({ namespace, name }, callOptions({ timeoutMs })), namespace, name);
      } catch (err) {
        if (httpStatusOfApiError(err) === 404) return undefined;
        throw err;
      }
    },
    async patchMetadata(namespace, name, patch, timeoutMs) {
      const pod = await api.patchNamespacedPodStatus(
        { namespace, name, body: { metadata: patch } },
        callOptions({ timeoutMs, contentType: PatchStrategy.MergePatch }),
      );
      return viewOf(pod, namespace, name);
    },
  };
}

function viewOf(object: unknown, namespace: string, name: string): PodView {
  const r = podViewOf(object);
  if ('problem' in r) {
    throw new CniError(Code.Internal, `read pod ${podKeyOf(namespace, name)}: the API server's answer: ${r.problem}`);
  }
  return r.pod;
}
