/// <reference types="bun-types" />
/**
 * The runtime of the shipped ferry-cni binary: Bun's native spawn, HTTP to ferryd as libc calls
 * (@ferry/http/libc), and rtnetlink through bun:ffi instead of `ip` execs for the InfraNIC's links.
 */
import { closeSync, openSync } from '@ferry/files/fs';
import { requestOverLibc } from '@ferry/http/libc';
import { Rtnetlink } from '@ferry/net/rtnetlink';
// The subpath, not the index: the runtime loads with every command, iproute2's schemas only with some.
import { RUN_TIMEOUT_MS, type Runner, timedOut } from '@ferry/net/run';
import { ERRNO, errno, errnoError, libc } from '@ferry/sys/libc';
import { rtnlSys } from './rtnl-sys';
import { pollLock, type Runtime, type Unlock } from './runtime';
import { sha256Hex } from './sha256';

const LOCK_SH = 1;
const LOCK_NB = 4;
const LOCK_UN = 8;

const run: Runner = async (argv, input) => {
  const p = Bun.spawnSync({
    cmd: [...argv],
    stdin: input === undefined ? 'ignore' : Buffer.from(input),
    stdout: 'pipe',
    stderr: 'pipe',
    timeout: RUN_TIMEOUT_MS,
    killSignal: 'SIGKILL',
  });
  if (p.exitedDueToTimeout) return timedOut(p.stdout.toString(), p.stderr.toString());
  return { exitCode: p.exitCode ?? 1, stdout: p.stdout.toString(), stderr: p.stderr.toString() };
};

/** One non-blocking flock(2) attempt: false while another holds the lock, an error for anything else. */
function tryFlock(fd: number, op: number, path: string): boolean {
  if (libc().flock(fd, op | LOCK_NB) === 0) return true;
  const e = errno();
  // EWOULDBLOCK is EAGAIN on Linux.
  if (e === ERRNO.EAGAIN || e === ERRNO.EINTR) return false;
  throw errnoError('flock', path, e);
}

/** flock(2) through the binary's libc binding: neither Bun nor Node offers it (the daemon-down DEL's lock). */
async function lockShared(path: string, timeoutMs: number): Promise<Unlock | undefined> {
  const fd = openSync(path, 'a+', 0o600);
  let taken = false;
  try {
    taken = await pollLock(() => tryFlock(fd, LOCK_SH, path), timeoutMs);
  } finally {
    if (!taken) closeSync(fd);
  }
  if (!taken) return undefined;
  return () => {
    libc().flock(fd, LOCK_UN);
    closeSync(fd);
  };
}

export const bunRuntime: Runtime = {
  run,
  links: new Rtnetlink(rtnlSys),
  request: requestOverLibc,
  lockShared,
  sha256Hex,
};
