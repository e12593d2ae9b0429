import { closeSync, constants, fstatSync, openSync, readSync } from '@ferry/files/fs';

/**
 * Reads a small file that someone else may have put there (the delete queue is written by every
 * shim): never through a symlink, never blocking on a FIFO, only a regular file, never more than
 * `maxBytes`. Throws an Error whose message says which rule the file broke, or the errno error.
 */
export function readSmallFile(path: string, maxBytes: number): string {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    // O_NOFOLLOW on a symlink fails with ELOOP: say what it is. Other errors keep their errno code.
    if ((err as NodeJS.ErrnoException).code === 'ELOOP') throw new Error('not a regular file', { cause: err });
    throw err;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new Error('not a regular file');
    if (st.size > maxBytes) throw new Error(`larger than ${maxBytes} bytes`);
    // The size can grow between fstat and read: read one byte more than allowed to notice.
    const buf = Buffer.alloc(maxBytes + 1);
    let n = 0;
    for (;;) {
      const got = readSync(fd, buf, n, buf.length - n, null);
      if (got === 0) break;
      n += got;
      if (n > maxBytes) throw new Error(`larger than ${maxBytes} bytes`);
    }
    return buf.toString('utf8', 0, n);
  } finally {
    closeSync(fd);
  }
}
