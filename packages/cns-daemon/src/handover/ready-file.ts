/**
 * The pod's own readiness (config.readyFile, `--ready-file`): present, naming the socket's inode, only
 * while this ferryd serves the socket. The socket path alone cannot tell a surge pod's ferryd from the one
 * it replaces: both pods' probes (ferryctl health --ready --ready-file) reach whoever serves it.
 */
import { rmSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { writeFileAtomically } from '@ferry/files';
import type { Logger } from 'pino';

export interface ReadyFile {
  write(socketInode: number): void;
  remove(): void;
}

export function readyFileAt(path: string | undefined, log: Logger): ReadyFile {
  return {
    write(socketInode) {
      if (!path) return;
      try {
        writeFileAtomically(dirname(path), basename(path), `${socketInode}\n`, { mode: 0o644 });
      } catch (err) {
        log.warn({ err, path }, 'could not write the ready file: the readiness probe will say not ready');
      }
    },
    remove() {
      if (path) rmSync(path, { force: true });
    },
  };
}
