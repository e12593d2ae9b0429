/** The error body as a schema, for parsing what ferryd answers. */
import * as z from 'zod/mini';
import type { CniErrorBody } from '../errors';

/** The wire shape of an error: what ferryd sends and what ferry-cni prints (plus cniVersion). */
export const CniErrorSchema: z.ZodMiniType<CniErrorBody> = z.object({
  cniVersion: z.optional(z.string()),
  code: z.number().check(z.int()),
  msg: z.string(),
  details: z.optional(z.string()),
});
