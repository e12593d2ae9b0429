/// <reference types="bun-types" />
/**
 * The runtime of the shipped ferry-cni binary: Bun's native spawn and fetch, and rtnetlink through
 * bun:ffi instead of `ip` execs for the InfraNIC's links. fetch bounds the whole request with one deadline; on a
 * unix socket connect() completes or fails at once, unless ferryd's accept backlog is full (a frozen
 * ferryd), and then the deadline ends the wait.
 */
import { closeSync, openSync } from '@ferry/files/fs';
import { Rtnetlink } from '@ferry/net/rtnetlink';
// The subpath, not the index: the runtime loads with every command, iproute2's schemas only with some.
import { RUN_TIMEOUT_MS, type Runner, timedOut } from '@ferry/net/run';
import { rtnlSys } from './rtnl-sys';
import {
  type HttpResponse,
  pollLock,
  type RequestOptions,
  type Runtime,
  reasonOfCode,
  type Unlock,
  UnreachableError,
} from './runtime';
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

async function request(o: RequestOptions): Promise<HttpResponse> {
  let res: Response;
  try {
    res = await fetch(`http://ferryd${o.path}`, {
      unix: o.socket,
      method: o.method,
      ...(o.body !== undefined ? { body: o.body, headers: { 'content-type': 'application/json' } } : {}),
      signal: AbortSignal.timeout(o.deadlineMs),
      keepalive: false,
    });
    return { status: res.status, body: await res.text() };
  } catch (err) {
    const e = err as Error & { code?: string };
    const isTimeout = e.name === 'TimeoutError' || e.name === 'AbortError';
    const why = isTimeout ? `no answer within ${o.deadlineMs} ms` : (e.code ?? e.message);
    throw new UnreachableError(
      `ferryd at ${o.socket} is unreachable: ${why}`,
      isTimeout ? 'timeout' : reasonOfCode(e.code),
      { cause: err },
    );
  }
}

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

export const bunRuntime: Runtime = { run, links: new Rtnetlink(rtnlSys), request, lockShared, sha256Hex };
