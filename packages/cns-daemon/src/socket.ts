import { chmodSync, lstatSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { StartupError } from './errors';

/**
 * Puts a listening socket at `path` without a moment in which the path answers nothing: the server binds
 * a name of its own beside the path (`.<name>.<pid>`, in the same root-only directory), the socket is
 * made 0600, and it is renamed over the path. A rename is atomic for every new connect(): each reaches
 * either the ferryd before (a stale socket of a crashed one: refused, as before) or this one, never
 * nothing (KEP-1591's socket hand-over). Connections already accepted stay with whoever accepted them.
 * Binding beside matters for the old ferryd too: a closing server unlinks the name it bound (libuv), and
 * that name is its own, never the path the successor now owns.
 *
 * Returns the socket's inode at the path (the hand-over watches it). Only a socket is ever replaced:
 * any other kind of file at the path stops start-up.
 */
export async function listenAtPath(listen: (tmp: string) => Promise<unknown>, path: string): Promise<number> {
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  let st: ReturnType<typeof lstatSync> | undefined;
  try {
    st = lstatSync(path);
  } catch {
    st = undefined;
  }
  if (st && !st.isSocket())
    throw new StartupError(`socket path ${path} exists and is not a socket; refusing to replace it`);
  const tmp = join(dir, `.${basename(path)}.${process.pid}`);
  rmSync(tmp, { force: true });
  await listen(tmp);
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
  return lstatSync(path).ino;
}
