import { chmodSync, lstatSync, mkdirSync, unlinkSync } from 'node:fs';
import { dirname } from 'node:path';
import { StartupError } from './errors';

/**
 * Prepares the unix socket path: its directory is root-only (0700) whatever it was before, and a socket
 * left by a crashed ferryd is removed. Only a socket is ever removed, never another kind of file.
 * Safe because ferryd holds the database lock: no other ferryd can be serving on it.
 */
export function prepareSocketPath(path: string): void {
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  let st: ReturnType<typeof lstatSync> | undefined;
  try {
    st = lstatSync(path);
  } catch {
    return;
  }
  if (!st.isSocket()) throw new StartupError(`socket path ${path} exists and is not a socket; refusing to remove it`);
  unlinkSync(path);
}

/** The socket itself is 0600: only root may talk to ferryd over it. */
export function restrictSocket(path: string): void {
  chmodSync(path, 0o600);
}
