/**
 * flock(2) on a file, the locks Ferry's processes share: the delete queue's (shims shared, ferryd
 * exclusive while it drains at start-up) and ferryd's database lock. #lock-impl makes the attempt through
 * libc in the Bun binary and through flock(1) everywhere else, by the package's import conditions (as
 * #fs-impl does for fs.ts); the wait is this one loop for both. The kernel drops a lock whose holder dies.
 */

import { closeSync, openSync } from '@ferry/files/fs';
import tryFlock from '#lock-impl';
import type { LockMode } from './lock-mode';

export type { LockMode };

export interface FileLock {
  /** The lock file's descriptor, open for reading and appending (ferryd writes its PID into it). */
  readonly fd: number;
  /** Lets go; closing the only descriptor of the lock's open file releases it. Safe to call twice. */
  release(): void;
}

/** How often a wait tries again. */
const RETRY_MS = 10;

/**
 * Takes the lock on `path` (created 0600 if missing) at once, or gives undefined while another holds a
 * conflicting one. Throws when the file cannot be opened or locked for any other reason.
 */
export function tryLockFile(path: string, mode: LockMode): FileLock | undefined {
  const fd = openSync(path, 'a+', 0o600);
  let taken = false;
  try {
    taken = tryFlock(fd, mode);
  } finally {
    if (!taken) closeSync(fd);
  }
  return taken ? heldLock(fd) : undefined;
}

/**
 * As tryLockFile, trying again every 10 ms for at most `timeoutMs`: undefined when it was not had in time.
 * The file stays open while it waits (what `fuser` or /proc shows of a waiting process).
 */
export async function lockFile(path: string, mode: LockMode, timeoutMs: number): Promise<FileLock | undefined> {
  const fd = openSync(path, 'a+', 0o600);
  const until = Date.now() + timeoutMs;
  let taken = false;
  try {
    for (;;) {
      taken = tryFlock(fd, mode);
      if (taken || Date.now() >= until) break;
      await new Promise((r) => setTimeout(r, RETRY_MS));
    }
  } finally {
    if (!taken) closeSync(fd);
  }
  return taken ? heldLock(fd) : undefined;
}

function heldLock(fd: number): FileLock {
  let held = true;
  return {
    fd,
    release() {
      // Closed once only: the number may already be another file's, and a second close would close that one.
      if (!held) return;
      held = false;
      closeSync(fd);
    },
  };
}
