/**
 * Size-capped rotation of the shim's log, safe with any number of shim processes writing at once and
 * without a lock. Every shim appends whole lines with O_APPEND (one write(2) each, which the kernel keeps
 * whole and unmixed); once per run, after its first line, a shim looks at the size of the file it
 * holds open (fstat) and, past the cap, moves it aside with one rename(2) to a name no other file has
 * (`cni.log.<UTC time>-<pid>`, lumberjack's scheme as multus uses it). Why this is lossless:
 * - a shim still holding the moved file's fd just finishes its lines into it;
 * - the next line from anyone creates a fresh `cni.log` (O_CREAT);
 * - no rename ever lands on an existing name, so no file is overwritten. A numbered chain
 *   (cni.log.1 → cni.log.2 …) would need several renames per rotation, and two shims rotating at
 *   once could move one file onto another;
 * - a shim moves the path only if it is still the file it measured (same inode): when two cross the
 *   cap together, the second finds a fresh file there and leaves it.
 * Then the oldest backups beyond the limit are deleted, by name (the names sort by time). Pruners racing
 * each other only ever delete files older than the newest `maxBackups` they saw, so together they never
 * delete more than one pruner alone would.
 */
import { fstatSync, readdirSync, renameSync, statSync, unlinkSync } from '@ferry/files/fs';
import { basenameOf, dirnameOf, joinName } from '@ferry/files/paths';

export interface Rotation {
  /** Rotate once the file is larger than this; 0: never (leave it to logrotate and friends). */
  maxBytes: number;
  /** Rotated files kept besides the live one; the oldest beyond this are deleted. */
  maxBackups: number;
}

/** `cni.log.20261130T231806.123Z-4242`: sorts by time, unique per process (a run rotates at most once). */
export function backupNameOf(file: string, now: Date, pid: number): string {
  return `${file}.${now.toISOString().replace(/[-:]/g, '')}-${pid}`;
}

const BACKUP_SUFFIX_RE = /^\d{8}T\d{6}\.\d{3}Z-\d+$/;

/** The rotated files of `file`, oldest first. */
export function backupsOf(file: string): string[] {
  const prefix = `${basenameOf(file)}.`;
  return readdirSync(dirnameOf(file))
    .filter((n) => n.startsWith(prefix) && BACKUP_SUFFIX_RE.test(n.slice(prefix.length)))
    .sort()
    .map((n) => joinName(dirnameOf(file), n));
}

/**
 * Moves `file` aside when the file open as `fd` is past the cap and is still the one at `file`, then
 * prunes old backups. Returns whether this call moved it. Never throws: a log must not fail a command.
 */
export function rotateIfFull(fd: number, file: string, r: Rotation, now = new Date()): boolean {
  if (r.maxBytes === 0) return false;
  try {
    const held = fstatSync(fd);
    if (!held.isFile() || held.size <= r.maxBytes) return false;
    const atPath = statSync(file);
    if (atPath.ino !== held.ino || atPath.dev !== held.dev) return false;
    renameSync(file, backupNameOf(file, now, process.pid));
  } catch {
    // Gone or moved meanwhile (another shim rotated it): nothing to do.
    return false;
  }
  pruneBackups(file, r.maxBackups);
  return true;
}

function pruneBackups(file: string, maxBackups: number): void {
  let backups: string[];
  try {
    backups = backupsOf(file);
  } catch {
    return;
  }
  for (const old of backups.slice(0, Math.max(0, backups.length - maxBackups))) {
    try {
      unlinkSync(old);
    } catch {
      // Deleted by a shim pruning at the same time.
    }
  }
}
