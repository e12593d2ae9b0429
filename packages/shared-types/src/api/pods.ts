/** The operator API's view of this node's pods: what ferryd's pod watch holds, and what a pod asks for. */
import * as z from 'zod/mini';
import { PodNicSchema } from '../kube/pod-nics';

/** One pod as ferryd reads it, with what its `ferry.dev/nics` annotation asks for. */
export const PodReportSchema = z.strictObject({
  namespace: z.string(),
  name: z.string(),
  uid: z.string(),
  resourceVersion: z.string(),
  /** Where the answer came from: the watch's cache, or a GET (the watch had not delivered the pod). */
  source: z.enum(['cache', 'api']),
  /** The NICs asked for; absent when the pod has no annotation (the network's `delegatedNICs` apply). */
  nics: z.optional(z.array(PodNicSchema)),
  /** Why the annotation is refused (an ADD of this pod fails with code 116 and this message). */
  problem: z.optional(z.string()),
  /**
   * The last ADD of this pod whose delegated NICs ferryd refused (116: malformed, unknown or not allowed;
   * 106: none free), until an ADD of it succeeds: what the kubelet shows in the pod's events.
   */
  refused: z.optional(
    z.strictObject({
      at: z.string(),
      code: z.number(),
      reason: z.enum(['malformed', 'unknown', 'not-allowed', 'unavailable']),
      msg: z.string(),
    }),
  ),
});
export type PodReport = z.infer<typeof PodReportSchema>;

/** Query of GET /v1/operator/pods/{namespace}/{name}: the pod the runtime means, by UID (K8S_POD_UID). */
export const PodQuerySchema = z.strictObject({ uid: z.optional(z.string().check(z.maxLength(128))) });

export const PodParamsSchema = z.strictObject({
  namespace: z.string().check(z.minLength(1), z.maxLength(63)),
  name: z.string().check(z.minLength(1), z.maxLength(253)),
});

export const PodsReportSchema = z.strictObject({
  nodeName: z.string(),
  watch: z.strictObject({
    /** The first list has been applied. */
    synced: z.boolean(),
    lastSync: z.nullable(z.string()),
    watchRestarts: z.number(),
    lastError: z.nullable(z.string()),
  }),
  /** Absent when `networkStatus` is off. */
  networkStatus: z.optional(
    z.strictObject({
      pending: z.number(),
      oldestPendingSec: z.number(),
      written: z.number(),
      conflicts: z.number(),
      failed: z.number(),
      gone: z.number(),
    }),
  ),
  pods: z.array(PodReportSchema),
});
export type PodsReport = z.infer<typeof PodsReportSchema>;
