/** GET /v1/status and /readyz: whether ferryd can serve ADD for a network. */
import * as z from 'zod/mini';
import { NetworkNameSchema } from '../cni/names';
import { FamilySchema } from './common';

export const StatusQuerySchema = z.strictObject({ network: NetworkNameSchema });

export const PoolFamilyStatusSchema = z.strictObject({
  family: FamilySchema,
  subnet: z.string(),
  // Approximate above 2^53 (an IPv6 /64); the shim only asks whether it is above zero.
  free: z.number(),
});

export const StatusSchema = z.strictObject({
  ready: z.boolean(),
  network: NetworkNameSchema,
  pools: z.array(PoolFamilyStatusSchema),
  /** Why ferryd is not ready (absent when ready), e.g. its storage is failing: path and cause. */
  reason: z.optional(z.string()),
});
export type Status = z.infer<typeof StatusSchema>;

export const ReadinessSchema = z.strictObject({
  ready: z.boolean(),
  /** starting | ready | draining */
  phase: z.enum(['starting', 'ready', 'draining']),
  /** Why not ready (absent when ready): the phase, or storage failing with its path and cause. */
  reason: z.optional(z.string()),
});
export type Readiness = z.infer<typeof ReadinessSchema>;

/** GET /healthz: alive, and the database answers. */
export const HealthSchema = z.strictObject({ ok: z.boolean(), msg: z.optional(z.string()) });
