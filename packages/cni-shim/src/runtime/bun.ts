/// <reference types="bun-types" />
/**
 * The runtime of the shipped ferry-cni binary: Bun's native spawn and fetch, which keep a whole ADD
 * near the cost of the Go reference plugins. fetch bounds the whole request with one deadline; on a
 * unix socket connect() completes or fails at once, unless ferryd's accept backlog is full (a frozen
 * ferryd), and then the deadline ends the wait.
 */
import type { Runner } from '@ferry/net';
import { type HttpResponse, type RequestOptions, type Runtime, UnreachableError } from './runtime';

const run: Runner = async (argv, input) => {
  const p = Bun.spawnSync({
    cmd: [...argv],
    stdin: input === undefined ? 'ignore' : Buffer.from(input),
    stdout: 'pipe',
    stderr: 'pipe',
  });
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
    const why =
      e.name === 'TimeoutError' || e.name === 'AbortError'
        ? `no answer within ${o.deadlineMs} ms`
        : (e.code ?? e.message);
    throw new UnreachableError(`ferryd at ${o.socket} is unreachable: ${why}`, { cause: err });
  }
}

export const bunRuntime: Runtime = { run, request };
