/**
 * The delete queue (docs/architecture.md "DEL (ferryd down)"): one file per attachment whose DEL could not reach
 * ferryd, written by the shim and applied by ferryd. The file format is a boundary like any other:
 * ferryd parses every entry with this schema and sets aside what does not fit.
 */
import * as z from 'zod/mini';
import { ContainerIdSchema, IfNameSchema, NetworkNameSchema } from '../cni/names';
import { PodRefSchema } from './common';

export const QUEUE_ENTRY_VERSION = 1;

/** Entries are named by a hash of the attachment key, so repeated DELs collapse onto one file. */
export const QUEUE_ENTRY_NAME_RE = /^[0-9a-f]{32}\.json$/;

/** An entry file larger than this is set aside unread; the shim never writes one. */
export const QUEUE_ENTRY_MAX_BYTES = 64 * 1024;

export const QueueEntrySchema = z.strictObject({
  version: z.literal(QUEUE_ENTRY_VERSION),
  network: NetworkNameSchema,
  containerId: ContainerIdSchema,
  ifName: IfNameSchema,
  /** CNI_NETNS as the runtime gave it (may be empty). */
  netns: z.string().check(z.maxLength(4096)),
  pod: z.optional(PodRefSchema),
  /** The DEL's prevResult, for the record (ferryd releases by the key and its own state). */
  prevResult: z.optional(z.nullable(z.looseObject({}))),
  /** When the shim gave up on ferryd (ISO 8601): an endpoint created later is not this DEL's. */
  queuedAt: z.iso.datetime(),
});
export type QueueEntry = z.infer<typeof QueueEntrySchema>;

export const PendingEntrySchema = z.strictObject({
  file: z.string(),
  network: z.optional(z.string()),
  containerId: z.optional(z.string()),
  ifName: z.optional(z.string()),
  queuedAt: z.optional(z.string()),
  attempts: z.number().check(z.int()),
  lastError: z.optional(z.string()),
});

export const FailedEntrySchema = z.strictObject({
  /** Its name in failed/ (a hash of the original name, which may be hostile). */
  file: z.string(),
  originalName: z.string(),
  reason: z.string(),
  movedAt: z.string(),
});

export const QueueStatusSchema = z.strictObject({
  dir: z.string(),
  pending: z.array(PendingEntrySchema),
  failed: z.array(FailedEntrySchema),
  /** Age of the oldest pending entry, seconds (0 when empty). */
  oldestAgeSec: z.number(),
});
export type QueueStatus = z.infer<typeof QueueStatusSchema>;

export const FailedEntryParamsSchema = z.strictObject({ file: z.string().check(z.regex(/^[0-9a-f]{64}$/)) });
