/// <reference types="bun-types" />
/**
 * The runtime of the shipped ferry-cni binary: Bun's native spawn, HTTP to ferryd as libc calls
 * (@ferry/http/libc), and rtnetlink through bun:ffi instead of `ip` execs for the InfraNIC's links.
 */
import { requestOverLibc } from '@ferry/http/libc';
// The subpath, not the index: the runtime loads with every command, iproute2's schemas only with some.
import { RUN_TIMEOUT_MS, type Runner, timedOut } from '@ferry/net/run';
import { rtnlSys } from './rtnl-sys';
import type { Runtime } from './runtime';
import { sha256Hex } from './sha256';

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

export const bunRuntime: Runtime = {
  run,
  rtnl: rtnlSys,
  request: requestOverLibc,
  sha256Hex,
};
