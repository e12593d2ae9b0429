/**
 * The runtime for Node (tests that run the sources, and the Node build used to exercise this seam):
 * execa for processes, undici for requests (@ferry/http, the client ferryctl and the tests use too).
 */
import { createHash } from 'node:crypto';
import { closeSync, openSync } from 'node:fs';
import { tryLock } from '@ferry/files/flock';
import { requestOverUndici } from '@ferry/http/undici';
import { nodeRunner } from '@ferry/net/node-runner';
import { pollLock, type Runtime, type Unlock } from './runtime';

async function lockShared(path: string, timeoutMs: number): Promise<Unlock | undefined> {
  const fd = openSync(path, 'a+', 0o600);
  let taken = false;
  try {
    taken = await pollLock(() => tryLock(fd, 'shared'), timeoutMs);
  } finally {
    if (!taken) closeSync(fd);
  }
  if (!taken) return undefined;
  // Closing the only descriptor of the lock's open file releases it.
  return () => closeSync(fd);
}

const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');

export const nodeRuntime: Runtime = { run: nodeRunner, request: requestOverUndici, lockShared, sha256Hex };
