/**
 * How ferryd validates requests: each route's zod schema, with a hand check in front of the ones every
 * ADD and DEL sends (allocate, commit, GET and DELETE of an endpoint). Parsing those with zod cost ~0.1 ms
 * of CPU per request when requests come one at a time (bench:ferryd-sparse), more than their SQLite work.
 * A hand check accepts only what its schema accepts and returns what the schema would; anything it is
 * not sure of goes to the schema, which also words the error. requests.test.ts holds them to the schemas.
 */
import { type AllocateRequest, AllocateRequestSchema } from '@ferry/shared-types/api/allocations';
import { ContainerIdParamsSchema } from '@ferry/shared-types/api/common';
import {
  type CommitRequest,
  CommitRequestSchema,
  type ReleaseQuery,
  ReleaseQuerySchema,
} from '@ferry/shared-types/api/endpoints';
import {
  arrayOf,
  type Check,
  isContainerId,
  isIfName,
  isInt,
  isMac,
  isNetworkName,
  isPositiveInt,
  maxLength,
  strictObject,
} from '@ferry/shared-types/hand-check';
import type { FastifySchemaCompiler } from 'fastify';
import { validatorCompiler as zodValidatorCompiler } from 'fastify-type-provider-zod';
import type * as z from 'zod/mini';

const isNetns: Check = (v) => typeof v === 'string' && v.length >= 1 && v.length <= 4096;
const isPodRef = strictObject(
  {},
  { namespace: maxLength(253), name: maxLength(253), uid: maxLength(128), infraContainerId: maxLength(255) },
);
const isAllocateRequest = strictObject(
  { network: isNetworkName, containerId: isContainerId, ifName: isIfName, netns: isNetns },
  {
    pod: isPodRef,
    delegatedNICs: strictObject({
      group: isNetworkName,
      count: (v) => isInt(v) && v >= 1 && v <= 16,
    }),
  },
);
const isCommitRequest = strictObject({
  network: isNetworkName,
  ifName: isIfName,
  generation: isPositiveInt,
  nics: (v) =>
    Array.isArray(v) &&
    v.length >= 1 &&
    arrayOf(strictObject({ ifName: isIfName, mac: isMac, containerIfIndex: isPositiveInt }))(v),
});
const isParams = strictObject({ containerId: isContainerId });
const isReleaseKey = strictObject({ network: isNetworkName, ifName: isIfName });
/** A generation as a query string carries it, in the plain decimal form only (zod's coercion takes more). */
const GENERATION = /^[1-9][0-9]{0,14}$/;

// The casts are the point of these checks: each value was just checked field by field against the
// schema's rules. The schemas transform nothing but the generation of a release, which is converted here.

export function acceptAllocateRequest(v: unknown): AllocateRequest | undefined {
  return isAllocateRequest(v) ? (v as AllocateRequest) : undefined;
}

export function acceptCommitRequest(v: unknown): CommitRequest | undefined {
  return isCommitRequest(v) ? (v as CommitRequest) : undefined;
}

export function acceptParams(v: unknown): z.infer<typeof ContainerIdParamsSchema> | undefined {
  return isParams(v) ? { containerId: (v as { containerId: string }).containerId } : undefined;
}

export function acceptReleaseQuery(v: unknown): ReleaseQuery | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const { generation, ...key } = v as Record<string, unknown>;
  if (!isReleaseKey(key)) return undefined;
  const { network, ifName } = key as { network: string; ifName: string };
  if (generation === undefined) return { network, ifName };
  if (typeof generation !== 'string' || !GENERATION.test(generation)) return undefined;
  return { network, ifName, generation: Number(generation) };
}

const HAND_CHECKS = new Map<unknown, (v: unknown) => unknown>([
  [AllocateRequestSchema, acceptAllocateRequest],
  [CommitRequestSchema, acceptCommitRequest],
  [ContainerIdParamsSchema, acceptParams],
  [ReleaseQuerySchema, acceptReleaseQuery],
]);

/** The zod type provider's validator compiler, with the hand check in front where a schema has one. */
export const validatorCompiler: FastifySchemaCompiler<z.core.$ZodType> = (route) => {
  const validate = zodValidatorCompiler(route);
  const accept = HAND_CHECKS.get(route.schema);
  if (!accept) return validate;
  return (data) => {
    const value = accept(data);
    return value === undefined ? validate(data) : { value };
  };
};
