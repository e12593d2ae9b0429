/// <reference types="bun-types" />
/**
 * The runtime of the shipped ferry-cni binary: Bun's native spawn, HTTP to ferryd as libc calls
 * (unix-http.ts), and rtnetlink through bun:ffi instead of `ip` execs for the InfraNIC's links.
 */
import { closeSync, openSync } from '@ferry/files/fs';
import { Rtnetlink } from '@ferry/net/rtnetlink';
// The subpath, not the index: the runtime loads with every command, iproute2's schemas only with some.
import { RUN_TIMEOUT_MS, type Runner, timedOut } from '@ferry/net/run';
import { rtnlSys } from './rtnl-sys';
import { pollLock, type Runtime, type Unlock } from './runtime';
import { sha256Hex } from './sha256';
import { unixHttpRequest } from './unix-http';

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

/**
 * flock(2) through bun:ffi: neither Bun nor Node offers it. Loaded only on the daemon-down DEL path,
 * the one place that locks.
 */
async function lockShared(path: string, timeoutMs: number): Promise<Unlock | undefined> {
  const { dlopen, FFIType } = await import('bun:ffi');
  const libc = dlopen('libc.so.6', { flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 } });
  const fd = openSync(path, 'a+', 0o600);
  if (!(await pollLock(() => libc.symbols.flock(fd, LOCK_SH | LOCK_NB) === 0, timeoutMs))) {
    closeSync(fd);
    return undefined;
  }
  return () => {
    libc.symbols.flock(fd, LOCK_UN);
    closeSync(fd);
  };
}

export const bunRuntime: Runtime = {
  run,
  links: new Rtnetlink(rtnlSys),
  request: unixHttpRequest,
  lockShared,
  sha256Hex,
};
