/**
 * How responses leave ferryd. Every answer is an object ferryd built itself, field by field, from
 * validated input and validated rows, so production writes it with JSON.stringify: the zod type
 * provider's serializer re-validated each one against its schema first, 30–50 µs per answer, the largest
 * single cost of a request outside SQLite (bench/README.md). Tests build the app with `checkResponses`, which
 * encodes every answer through its route's zod schema and fails on any drift; the shim and ferryctl
 * validate what they receive as well.
 */
import type { FastifySerializerCompiler } from 'fastify/types/schema';
import { serializerCompiler as checkingSerializerCompiler } from 'fastify-type-provider-zod';
import type * as z from 'zod/mini';

const plainSerializerCompiler: FastifySerializerCompiler<z.ZodMiniType> = () => (data) => JSON.stringify(data);

export function serializerCompilerOf(checkResponses: boolean): FastifySerializerCompiler<z.ZodMiniType> {
  return checkResponses
    ? (checkingSerializerCompiler as FastifySerializerCompiler<z.ZodMiniType>)
    : plainSerializerCompiler;
}
