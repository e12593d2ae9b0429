import * as z from 'zod/mini';

/**
 * A result as received from another plugin (prevResult) or another version: every field optional and
 * unknown keys kept, as Go's json.Unmarshal tolerates them. Convert it with `convertResult`. A module
 * of its own: the strict per-version schemas (result.ts) serve tests and tools, and the shim should not
 * build them on every ADD.
 */
export const AnyResultSchema = z.looseObject({
  cniVersion: z.optional(z.string()),
  interfaces: z.optional(z.array(z.looseObject({ name: z.string() }))),
  ips: z.optional(
    z.array(z.looseObject({ address: z.string(), version: z.optional(z.string()), interface: z.optional(z.number()) })),
  ),
  routes: z.optional(z.array(z.looseObject({ dst: z.string() }))),
  dns: z.optional(z.looseObject({})),
});
export type AnyResult = z.infer<typeof AnyResultSchema>;
