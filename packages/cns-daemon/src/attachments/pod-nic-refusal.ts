/**
 * The refusals of a pod's request for delegated NICs, and who asks (for their messages): every check of
 * nic-choice.ts and its pieces refuses with a PodNicRefusal, whose reason ferryd counts (pods/refusals.ts).
 */
import type { AllocateRequest } from '@ferry/shared-types/api/allocations';
import { CniError, Code } from '@ferry/shared-types/errors';

/** Why a pod does not get what it asked for: the label of ferryd's refusal metric. */
export type RefusalReason = 'malformed' | 'unknown' | 'not-allowed' | 'unavailable';

/** A refused request for delegated NICs (116: the pod may not, or asks for nothing that exists; 106: none free). */
export class PodNicRefusal extends CniError {
  readonly reason: RefusalReason;
  constructor(reason: RefusalReason, message: string) {
    super(reason === 'unavailable' ? Code.DeviceUnavailable : Code.InvalidPodIntent, message);
    this.name = 'PodNicRefusal';
    this.reason = reason;
  }
}

/** Who asks, for messages: the pod and (for its annotation) where in it. */
export interface Asker {
  namespace: string | undefined;
  name: string | undefined;
  pod: string;
}

export function askerOf(req: AllocateRequest): Asker {
  const { namespace, name } = req.pod ?? {};
  const pod = namespace && name ? `pod ${namespace}/${name}` : `container ${req.containerId}`;
  return { namespace, name, pod };
}
