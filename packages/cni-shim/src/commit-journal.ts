/**
 * The shim's side of the commit journal (shared-types api/commit-journal.ts): ADD's commit as a file that
 * ferryd promotes before anything reads or changes the attachment, instead of a second round trip.
 *
 * Written whole or not at all (temp file, rename), without fsync: that is the durability of ferryd's own
 * commit (SQLite WAL with synchronous=NORMAL does not fsync each transaction), so the journal loses
 * nothing a PUT would keep. A crash of the shim or ferryd loses nothing; a power loss may, and it also
 * takes every pod netns with it, after which the stale-endpoint reconciler releases the attachment.
 * The directory is never created here: ferryd creates it at start, so where it is missing (no ferryd has
 * run on this node yet, or it was removed), as where it cannot be written, ADD commits over the socket.
 */
import { SHARED_TEMP_PREFIX, writeFileAtomically } from '@ferry/files';
import type { JournalEntry } from '@ferry/shared-types/api/commit-journal';
import type { CommitRequest } from '@ferry/shared-types/api/endpoints';
// Types only: the schema module builds zod schemas when loaded, milliseconds of every ADD's start-up.
import { attachmentFileNameOf } from '@ferry/shared-types/attachment-file';
import { DEFAULT_DELETE_QUEUE, defaultCommitJournalOf } from '@ferry/shared-types/config/defaults';
import type { ShimConf } from './config';
import type { Runtime } from './runtime/runtime';

export function commitJournalOf(conf: ShimConf): string {
  return conf.commitJournal ?? defaultCommitJournalOf(conf.deleteQueue ?? DEFAULT_DELETE_QUEUE);
}

/** Writes the entry, replacing an older one of the same attachment; throws the file system's error. */
export function writeJournalEntry(
  runtime: Pick<Runtime, 'sha256Hex'>,
  dir: string,
  containerId: string,
  commit: CommitRequest,
  now: Date,
): string {
  // `version: 1` is JournalEntry's literal: the type keeps it in step with the schema.
  const entry: JournalEntry = { version: 1, containerId, writtenAt: now.toISOString(), ...commit };
  const name = attachmentFileNameOf(runtime.sha256Hex, commit.network, containerId, commit.ifName);
  // ferryd knows the temp file for a write in progress.
  writeFileAtomically(dir, name, JSON.stringify(entry), { mode: 0o600, tempPrefix: SHARED_TEMP_PREFIX, fsync: false });
  return name;
}
