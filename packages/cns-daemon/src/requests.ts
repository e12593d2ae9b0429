/**
 * How ferryd validates requests: each route's zod schema, with the check generated from it
 * (@ferry/shared-types/checks, scripts/checks) in front of the ones every ADD and DEL sends (allocate,
 * commit, GET and DELETE of an endpoint). Parsing those with zod cost ~0.1 ms of CPU per request when
 * requests come one at a time (bench:ferryd-sparse), more than their SQLite work. A value the check
 * accepts is what the schema would return for it; anything else goes to the schema, which also words the
 * error (a release query's generation arrives as text: the schema coerces it).
 */
import { AllocateRequestSchema } from '@ferry/shared-types/api/allocations';
import { ContainerIdParamsSchema } from '@ferry/shared-types/api/common';
import { CommitRequestSchema, ReleaseQuerySchema } from '@ferry/shared-types/api/endpoints';
import type { FastifySchemaCompiler } from 'fastify';
import { validatorCompiler as zodValidatorCompiler } from 'fastify-type-provider-zod';
import type * as z from 'zod/mini';
import { isAllocateRequest, isCommitRequest, isContainerIdParams, isReleaseQuery } from './request-checks';

/** A schema and the check generated from it, typed alike (so a check cannot be paired with another schema). */
const checked = <T>(schema: z.ZodMiniType<T>, check: (v: unknown) => v is T) => [schema, check] as const;

const CHECKS = new Map<unknown, (v: unknown) => boolean>([
  checked(AllocateRequestSchema, isAllocateRequest),
  checked(CommitRequestSchema, isCommitRequest),
  checked(ContainerIdParamsSchema, isContainerIdParams),
  checked(ReleaseQuerySchema, isReleaseQuery),
]);

/** The zod type provider's validator compiler, with the generated check in front where a schema has one. */
export const validatorCompiler: FastifySchemaCompiler<z.core.$ZodType> = (route) => {
  const validate = zodValidatorCompiler(route);
  const check = CHECKS.get(route.schema);
  if (!check) return validate;
  return (data) => (check(data) ? { value: data } : validate(data));
};
