/**
 * The commit journal's directory as ferryd reads it (shared-types api/commit-journal.ts): every file in
 * it, each parsed or with the reason it cannot be. Attachments.settleJournal promotes the entries; this
 * module only reads and removes files. Files are untrusted input (every shim writes here): only regular
 * files named like an entry and small enough are read, never through a symlink.
 */
import { existsSync, mkdirSync, readdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { readSmallFile } from '@ferry/files/read-small';
import { isTempFile, removeIfAbandoned } from '@ferry/files/sweep';
import {
  JOURNAL_ENTRY_MAX_BYTES,
  JOURNAL_ENTRY_NAME_RE,
  type JournalEntry,
  JournalEntrySchema,
} from '@ferry/shared-types/api/commit-journal';
import { describeFirstIssue } from '@ferry/shared-types/parse';

export type JournalFile = { name: string; entry: JournalEntry } | { name: string; problem: string };

export class JournalDir {
  readonly dir: string;

  constructor(dir: string) {
    this.dir = dir;
    // The shim writes only into an existing directory: its presence says this ferryd reads it.
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  /** The entries now in the directory (usually none: each is removed once promoted or discarded). */
  list(nowMs: number): JournalFile[] {
    const out: JournalFile[] = [];
    for (const name of this.#names()) {
      if (isTempFile(name)) {
        removeIfAbandoned(this.dir, name, nowMs);
        continue;
      }
      const file = this.read(name);
      if (file) out.push(file);
    }
    return out;
  }

  /** The names of the files now waiting to be settled; a shim's temp file is a write in progress, not one. */
  waiting(): string[] {
    return this.#names().filter((name) => !isTempFile(name));
  }

  /** The entry named `name`, or undefined when there is none (the usual case: ADD's own, looked up first). */
  read(name: string): JournalFile | undefined {
    if (JOURNAL_ENTRY_NAME_RE.test(name)) return readEntry(this.dir, name);
    return existsSync(join(this.dir, name)) ? { name, problem: 'not an entry name' } : undefined;
  }

  remove(name: string): void {
    try {
      unlinkSync(join(this.dir, name));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }

  #names(): string[] {
    try {
      return readdirSync(this.dir);
    } catch (err) {
      // Removed (or replaced) under ferryd: shims commit over the socket until a restart creates it again.
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return [];
      throw err;
    }
  }
}

/** The file parsed, or why it cannot be; undefined when it is gone. */
function readEntry(dir: string, name: string): JournalFile | undefined {
  let doc: unknown;
  try {
    doc = JSON.parse(readSmallFile(join(dir, name), JOURNAL_ENTRY_MAX_BYTES));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    return { name, problem: `unreadable: ${(err as Error).message}` };
  }
  const r = JournalEntrySchema.safeParse(doc);
  return r.success ? { name, entry: r.data } : { name, problem: `invalid entry: ${describeFirstIssue(r.error)}` };
}
