/**
 * The shim's side of the delete queue: a DEL that cannot reach ferryd is written down durably and
 * exit 0 follows, so kubelet never waits on ferryd and nothing is forgotten.
 *
 * Lock protocol (as Cilium's): the shim holds a shared lock on <dir>/lock while it re-checks ferryd and
 * writes; ferryd holds it exclusively while it drains at start-up and lets go only once it serves. A DEL
 * therefore either reaches a serving ferryd or lands in the queue before ferryd's drain, never between.
 */
import { SHARED_TEMP_PREFIX, writeFileAtomically } from '@ferry/files';
import { mkdirSync, readdirSync } from '@ferry/files/fs';
import {
  QUEUE_ENTRY_MAX_BYTES,
  QUEUE_ENTRY_NAME_RE,
  QUEUE_ENTRY_VERSION,
  type QueueEntry,
  QueueEntrySchema,
} from '@ferry/shared-types/api/queue';
import { attachmentFileNameOf } from '@ferry/shared-types/attachment-file';
import { CniError, Code, onFile } from '@ferry/shared-types/errors';
import { describeFirstIssue } from '@ferry/shared-types/parse';
import type { Runtime } from '../runtime/runtime';

export function prepareQueueDir(dir: string): void {
  onFile(`create the delete queue ${dir}`, () => mkdirSync(dir, { recursive: true, mode: 0o700 }));
}

/**
 * The entry exactly as ferryd will read it: what ferryd would set aside unapplied is refused here, while
 * the runtime can still be told. prevResult and the pod fields are only for the record (ferryd releases
 * by the key), so when they are what does not fit (too large, a pod name ferryd would refuse), they are
 * left out rather than failing the DEL.
 */
export function toEntry(entry: Omit<QueueEntry, 'version'>): QueueEntry {
  const { prevResult, pod, ...key } = entry;
  const full = { version: QUEUE_ENTRY_VERSION, ...entry };
  const candidates = [
    full,
    { version: QUEUE_ENTRY_VERSION, ...key, ...(prevResult !== undefined ? { prevResult } : {}) },
    { version: QUEUE_ENTRY_VERSION, ...key, ...(pod ? { pod } : {}) },
    { version: QUEUE_ENTRY_VERSION, ...key },
  ];
  let problem = '';
  for (const c of candidates) {
    const r = QueueEntrySchema.safeParse(c);
    if (!r.success) problem = describeFirstIssue(r.error);
    else if (Buffer.byteLength(JSON.stringify(r.data)) > QUEUE_ENTRY_MAX_BYTES) {
      problem = `the entry is larger than ${QUEUE_ENTRY_MAX_BYTES} bytes`;
    } else return r.data;
  }
  throw new CniError(Code.InvalidConfig, `queue DEL of ${entry.containerId}/${entry.ifName}: ${problem}`);
}

/**
 * Writes the entry: temp file, fsync, rename, fsync of the directory. A repeated DEL replaces its own
 * entry. A full queue is an error (code 110) so the runtime retries instead of the request being dropped.
 * The limit is soft: shims hold the lock shared, so DELs racing each other may pass it together.
 */
export function writeEntry(runtime: Pick<Runtime, 'sha256Hex'>, dir: string, limit: number, entry: QueueEntry): string {
  const name = attachmentFileNameOf(runtime.sha256Hex, entry.network, entry.containerId, entry.ifName);
  const pending = onFile(`read the delete queue ${dir}`, () => readdirSync(dir)).filter((f) =>
    QUEUE_ENTRY_NAME_RE.test(f),
  );
  if (!pending.includes(name) && pending.length >= limit) {
    throw new CniError(
      Code.QueueFull,
      `queue DEL of ${entry.containerId}/${entry.ifName}: the delete queue ${dir} is full (${pending.length} entries)`,
      'ferryd is down and has not drained it; the runtime should retry',
    );
  }
  // ferryd's drain knows the temp file for a write in progress.
  onFile(`write ${dir}/${name}`, () =>
    writeFileAtomically(dir, name, JSON.stringify(entry), { mode: 0o600, tempPrefix: SHARED_TEMP_PREFIX }),
  );
  return name;
}
