/**
 * How responses leave ferryd. Every answer is an object ferryd built itself, field by field, from
 * validated input and validated rows, so production writes it with JSON.stringify: the zod type
 * provider's serializer re-validated each one against its schema first, 30–50 µs per answer, the largest
 * single cost of a request outside SQLite (bench/README.md). Tests build the app with `checkResponses`, which
 * encodes every answer through its route's zod schema and fails on any drift, a field the schema does not
 * have included (zod drops unknown keys of a plain object quietly, which would hide a leak); the shim and
 * ferryctl validate what they receive as well.
 */
import type { FastifySerializerCompiler } from 'fastify/types/schema';
import { serializerCompiler as checkingSerializerCompiler } from 'fastify-type-provider-zod';
import type * as z from 'zod/mini';

const plainSerializerCompiler: FastifySerializerCompiler<z.ZodMiniType> = () => (data) => JSON.stringify(data);

const strictSerializerCompiler: FastifySerializerCompiler<z.ZodMiniType> = (route) => {
  const encode = (checkingSerializerCompiler as FastifySerializerCompiler<z.ZodMiniType>)(route);
  return (data) => {
    const text = encode(data);
    const dropped = droppedKey(JSON.parse(JSON.stringify(data)), JSON.parse(text), '');
    if (dropped !== undefined) {
      throw new Error(`response of ${route.method} ${route.url}: "${dropped}" is not in the response schema`);
    }
    return text;
  };
};

export function serializerCompilerOf(checkResponses: boolean): FastifySerializerCompiler<z.ZodMiniType> {
  return checkResponses ? strictSerializerCompiler : plainSerializerCompiler;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The path of the first key in `sent` that encoding left out of `kept`, if any. */
function droppedKey(sent: unknown, kept: unknown, path: string): string | undefined {
  if (Array.isArray(sent) && Array.isArray(kept)) {
    for (const [i, v] of sent.entries()) {
      const d = droppedKey(v, kept[i], `${path}[${i}]`);
      if (d !== undefined) return d;
    }
  }
  if (isRecord(sent) && isRecord(kept)) {
    for (const [k, v] of Object.entries(sent)) {
      const at = path ? `${path}.${k}` : k;
      if (!(k in kept)) return at;
      const d = droppedKey(v, kept[k], at);
      if (d !== undefined) return d;
    }
  }
  return undefined;
}
