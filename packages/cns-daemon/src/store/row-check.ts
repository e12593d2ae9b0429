/**
 * Hand checks derived from row schemas. A row schema is a flat object of strings, numbers, integers,
 * enums and literals, any of them nullable; for such a schema a few typeof tests say what zod would,
 * at a fraction of the cost of running zod's parser, which was ~0.1 ms of CPU per ADD or DEL request
 * when requests come one at a time (bench:ferryd-sparse). The check accepts a row only when every column
 * is of the schema and no other column is there (zod would strip it), so the row is what zod returns;
 * anything else goes to zod, which also words the error. A schema with any other kind of field (or a
 * refinement) gets no hand check. row-check.test.ts holds the rows' checks to their schemas.
 */
import { type Check, isInt, isNumber, isString, nullable, oneOf, strictObject } from '@ferry/shared-types/hand-check';
import type * as z from 'zod';

interface Def {
  type: string;
  checks?: unknown[];
  format?: string;
  innerType?: z.core.$ZodType;
  entries?: Record<string, unknown>;
  values?: unknown[];
  options?: z.core.$ZodType[];
  shape?: Record<string, z.core.$ZodType>;
  catchall?: unknown;
}

const defOf = (schema: z.core.$ZodType) => schema._zod.def as Def;

/** The check for one field, or undefined when the field is not of a kind a row schema uses. */
function fieldCheck(schema: z.core.$ZodType): Check | undefined {
  const def = defOf(schema);
  switch (def.type) {
    case 'string':
      return def.checks?.length ? undefined : isString;
    case 'number':
      if (def.format === 'safeint' && !def.checks?.length) return isInt;
      return def.format === undefined && !def.checks?.length ? isNumber : undefined;
    case 'nullable': {
      const inner = def.innerType && fieldCheck(def.innerType);
      return inner && nullable(inner);
    }
    case 'enum':
      return def.entries && oneOf(...Object.values(def.entries));
    case 'literal':
      return def.values && oneOf(...def.values);
    case 'union': {
      const options = def.options?.map(fieldCheck);
      if (!options?.length || options.some((o) => o === undefined)) return undefined;
      return (v) => options.some((o) => o?.(v));
    }
    default:
      return undefined;
  }
}

/** The hand check of a row schema (a plain object of such fields, or one such value), or undefined. */
export function rowCheckOf(schema: z.core.$ZodType): Check | undefined {
  const def = defOf(schema);
  if (def.type !== 'object') return fieldCheck(schema);
  if (!def.shape || def.catchall !== undefined || def.checks?.length) return undefined;
  const fields: Record<string, Check> = {};
  for (const [key, field] of Object.entries(def.shape)) {
    const check = fieldCheck(field);
    if (!check) return undefined;
    fields[key] = check;
  }
  return strictObject(fields);
}
