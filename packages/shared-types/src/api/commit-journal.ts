/**
 * The commit journal: how a shim commits an ADD without a second round trip to ferryd. After building
 * the NICs the shim writes one file per attachment (this schema) and prints the result; ferryd promotes
 * the entry to a commit, with the same checks as PUT /v1/endpoints/{containerId}, before it reads or
 * changes any attachment (every shim request, operator reads, the reconciler, start-up). The file format
 * is a boundary like any other: ferryd parses every entry with this schema and discards what does not
 * fit.
 */
import * as z from 'zod/mini';
import { ContainerIdSchema } from '../cni/names';
import { CommitRequestSchema } from './endpoints';

export const JOURNAL_ENTRY_VERSION = 1;

/** Named like delete-queue entries: a hash of the attachment key, so a re-ADD replaces its own entry. */
export const JOURNAL_ENTRY_NAME_RE = /^[0-9a-f]{32}\.json$/;

/** An entry file larger than this is discarded unread; the shim never writes one. */
export const JOURNAL_ENTRY_MAX_BYTES = 16 * 1024;

/** The commit request of PUT /v1/endpoints/{containerId}, plus the container and when it was written. */
export const JournalEntrySchema = z.extend(CommitRequestSchema, {
  version: z.literal(JOURNAL_ENTRY_VERSION),
  containerId: ContainerIdSchema,
  /**
   * When the shim wrote it (ISO 8601); the attachment's update time becomes this, not the time ferryd
   * promoted it, so a DEL queued after the ADD but applied before the promotion still releases it.
   */
  writtenAt: z.iso.datetime(),
});
export type JournalEntry = z.infer<typeof JournalEntrySchema>;
