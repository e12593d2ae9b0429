/** POST /v1/gc — CNI GC for one network: remove every attachment not in the valid list. */
import * as z from 'zod/mini';
import { ContainerIdSchema, IfNameSchema, NetworkNameSchema } from '../cni/names';
import { InterfaceRecordSchema } from './endpoints';

export const GcRequestSchema = z.strictObject({
  network: NetworkNameSchema,
  validAttachments: z.array(z.strictObject({ containerId: ContainerIdSchema, ifName: IfNameSchema })),
});
export type GcRequest = z.infer<typeof GcRequestSchema>;

export const GcResultSchema = z.strictObject({
  /** Interfaces released; the shim deletes their host veths. */
  removed: z.array(InterfaceRecordSchema),
  /** Attachments that could not be removed; GC carries on past them. */
  errors: z.array(z.strictObject({ containerId: z.string(), ifName: z.string(), msg: z.string() })),
});
export type GcResult = z.infer<typeof GcResultSchema>;
