import { CniError, Code } from '@ferry/shared-types/errors';

/** A file system failure (ENOENT, EACCES, ENOSPC…) as code 5, naming what was being done: no stack trace. */
export function onFile<T>(what: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === undefined) throw err;
    throw new CniError(Code.IoFailure, `${what}: ${e.code}`, '', { cause: err });
  }
}
