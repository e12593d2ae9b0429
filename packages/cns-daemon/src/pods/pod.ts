/** The fields of a Pod object ferryd reads, validated where the object enters (a watch event, a GET). */
import { describeFirstIssue } from '@ferry/shared-types/parse';
import * as z from 'zod/mini';

const PodSchema = z.object({
  metadata: z.object({
    name: z.string().check(z.minLength(1)),
    namespace: z.string().check(z.minLength(1)),
    uid: z.string().check(z.minLength(1)),
    resourceVersion: z.string().check(z.minLength(1)),
    annotations: z.optional(z.nullable(z.record(z.string(), z.string()))),
    deletionTimestamp: z.optional(z.nullable(z.string())),
  }),
  spec: z.optional(z.object({ nodeName: z.optional(z.string()), hostNetwork: z.optional(z.nullable(z.boolean())) })),
  status: z.optional(z.object({ phase: z.optional(z.nullable(z.string())) })),
});

/** One pod as ferryd holds it. */
export interface PodView {
  namespace: string;
  name: string;
  uid: string;
  resourceVersion: string;
  annotations: Readonly<Record<string, string>>;
  nodeName?: string;
  /**
   * Set when the pod needs no address from this node's pools: in the node's network namespace, finished
   * (Succeeded or Failed), or being deleted. The block manager counts the others as demand.
   */
  needsNoAddress?: true;
}

/** The pod a Pod object stands for, or why it cannot be read. */
export function podViewOf(object: unknown): { pod: PodView } | { problem: string } {
  const r = PodSchema.safeParse(object);
  if (!r.success) return { problem: describeFirstIssue(r.error) };
  const { metadata, spec, status } = r.data;
  const isFinished = status?.phase === 'Succeeded' || status?.phase === 'Failed';
  return {
    pod: {
      namespace: metadata.namespace,
      name: metadata.name,
      uid: metadata.uid,
      resourceVersion: metadata.resourceVersion,
      annotations: metadata.annotations ?? {},
      ...(spec?.nodeName ? { nodeName: spec.nodeName } : {}),
      ...(spec?.hostNetwork === true || isFinished || metadata.deletionTimestamp ? { needsNoAddress: true } : {}),
    },
  };
}

/** `namespace/name`: a pod's key in maps and log lines. */
export const podKeyOf = (namespace: string, name: string): string => `${namespace}/${name}`;

/** The kubelet's mark on the mirror of a static pod: the static pod's own UID (its config hash). */
const MIRROR_ANNOTATION = 'kubernetes.io/config.mirror';

/**
 * Whether `pod` is the pod the runtime means by `uid` (K8S_POD_UID), when it gives one. A static pod's
 * sandbox carries the kubelet's UID for it, which is not the UID of its mirror in the API but is written
 * on the mirror; a pod of the same name with another UID is an older or newer pod, not this one.
 */
export function isPodWithUid(pod: PodView, uid: string | undefined): boolean {
  return uid === undefined || uid === '' || pod.uid === uid || pod.annotations[MIRROR_ANNOTATION] === uid;
}
