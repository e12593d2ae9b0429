import * as z from 'zod/mini';

/**
 * Attaches a description to a schema (zod's global registry), where docs/configuration.md and the
 * OpenAPI document read it. The schema must be this field's own instance, not one shared between fields.
 */
export function doc<T extends z.ZodMiniType>(schema: T, description: string): T {
  z.globalRegistry.add(schema, { description });
  return schema;
}
