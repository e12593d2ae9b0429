import { closeSync, fsyncSync, openSync, renameSync, unlinkSync, writeSync } from '@ferry/files/fs';
import { utf8Encode } from '@ferry/sys/utf8';
import { joinName } from './paths';

export interface AtomicWriteOptions {
  mode: number;
  /** Start of the temp file's name in `dir`: SHARED_TEMP_PREFIX where readers of the directory skip them. */
  tempPrefix?: string;
  /**
   * false: no fsync of the file or the directory. The file is still whole or absent for every reader and
   * survives the writer's crash; only a power loss or kernel crash may lose it. Default true.
   */
  fsync?: boolean;
  /** At most this many bytes per write(2) (EXECUTABLE_WRITE_BYTES for an executable). Default: all at once. */
  maxWriteBytes?: number;
}

/**
 * The write size for an executable the runtime execs per pod (ferry-cni). The page cache keeps a file in
 * folios as large as the writes that made it (ext4 since Linux 6.16, XFS earlier), and an exec maps the
 * whole large folio a fault lands in: the shim written in 64 KiB writes or more peaks at ~37.5 MiB RSS per
 * ADD, written in 16–32 KiB writes at ~31.7 MiB, the same as when the exec's own faults read it in (pages
 * it never runs stay unmapped), and with the same CPU (4 KiB writes: +1 ms, more faults). bench/README.md.
 */
export const EXECUTABLE_WRITE_BYTES = 16 * 1024;

/**
 * The temp-file prefix of writers into a directory that others read (the delete queue, the commit journal):
 * ferryd skips such a file as a write in progress, and removes it once abandoned (sweep.ts).
 */
export const SHARED_TEMP_PREFIX = '.tmp-';

let written = 0;

/**
 * Unique among live processes (pid) and within one (a counter), and unlikely to meet a dead process's
 * leftover (the time); the open is exclusive anyway. No random bytes: the first use of a random source
 * costs the Bun-compiled shim a quarter of a millisecond, and importing node:crypto several.
 */
function tempSuffix(): string {
  written++;
  return `${process.pid}-${Date.now().toString(36)}-${written}`;
}

/**
 * Writes `name` in `dir` so that readers see the old file or the new one, never a part: a temp file in
 * the same directory, fsync, rename over the target, fsync of the directory (so the rename survives a
 * crash). Replacing a running binary this way is safe; writing into it in place gives ETXTBSY, or a
 * corrupt binary to the next exec. Throws on failure and leaves no temp file behind.
 */
export function writeFileAtomically(
  dir: string,
  name: string,
  content: Uint8Array | string,
  opts: AtomicWriteOptions,
): void {
  const tmp = joinName(dir, `${opts.tempPrefix ?? `.${name}.tmp-`}${tempSuffix()}`);
  const fd = openSync(tmp, 'wx', opts.mode);
  let isOpen = true;
  try {
    // A regular file takes short writes only when the disk fills; then the next write says why.
    let rest = typeof content === 'string' ? utf8Encode(content) : content;
    const max = opts.maxWriteBytes ?? rest.length;
    while (rest.length > 0) rest = rest.subarray(writeSync(fd, rest.subarray(0, max)));
    if (opts.fsync !== false) fsyncSync(fd);
    // Closed once only, even when close fails: the number may already be another file's (ferryd's
    // threads open files too), and a second close would close that one.
    isOpen = false;
    closeSync(fd);
    renameSync(tmp, joinName(dir, name));
  } catch (err) {
    if (isOpen) {
      try {
        closeSync(fd);
      } catch {
        // The write's error is the one to report.
      }
    }
    try {
      unlinkSync(tmp);
    } catch {
      // Not created, or already gone.
    }
    throw err;
  }
  if (opts.fsync === false) return;
  const dirFd = openSync(dir, 'r');
  try {
    fsyncSync(dirFd);
  } finally {
    closeSync(dirFd);
  }
}
