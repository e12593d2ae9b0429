import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Writes `name` in `dir` so that readers see the old file or the new one, never a part: a temp file in
 * the same directory, fsync, rename over the target, fsync of the directory. Replacing a binary that is
 * running this way is safe (writing into it in place gives ETXTBSY, or a corrupt binary to the next exec).
 */
export function writeAtomically(dir: string, name: string, content: Uint8Array | string, mode: number): void {
  const tmp = join(dir, `.${name}.tmp-${randomBytes(4).toString('hex')}`);
  const fd = openSync(tmp, 'wx', mode);
  try {
    writeSync(fd, typeof content === 'string' ? Buffer.from(content) : content);
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw err;
  } finally {
    try {
      closeSync(fd);
    } catch {
      // Closed in the catch above.
    }
  }
  try {
    renameSync(tmp, join(dir, name));
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
  const dirFd = openSync(dir, 'r');
  try {
    fsyncSync(dirFd);
  } finally {
    closeSync(dirFd);
  }
}
