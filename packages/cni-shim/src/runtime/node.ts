/**
 * The runtime for Node (tests that run the sources, and the Node build used to exercise this seam):
 * execa for processes, node:http for requests with a separate connect timeout and total deadline.
 */
import { createHash } from 'node:crypto';
import { closeSync, openSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tryLock } from '@ferry/files/flock';
import { nodeRunner } from '@ferry/net/node-runner';
import {
  type HttpResponse,
  type InFlight,
  pollLock,
  type RequestOptions,
  type Runtime,
  reasonOfCode,
  type Unlock,
  UnreachableError,
  type UnreachableReason,
} from './runtime';

function request(o: RequestOptions): InFlight<HttpResponse> {
  const answer = exchange(o);
  // Asked for later (ADD and CHECK work meanwhile): a failure before that is not an unhandled rejection.
  answer.catch(() => undefined);
  return { answer: () => answer };
}

function exchange(o: RequestOptions): Promise<HttpResponse> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const fail = (why: string, reason: UnreachableReason, cause?: unknown) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      req.destroy();
      reject(new UnreachableError(`ferryd at ${o.socket} is unreachable: ${why}`, reason, { cause }));
    };
    const deadline = setTimeout(() => fail(`no answer within ${o.deadlineMs} ms`, 'timeout'), o.deadlineMs);
    const req = httpRequest(
      {
        socketPath: o.socket,
        method: o.method,
        path: o.path,
        agent: false,
        headers: {
          ...o.headers,
          ...(o.body !== undefined
            ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(o.body) }
            : {}),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => {
          if (settled) return;
          settled = true;
          clearTimeout(deadline);
          const headers = new Map(Object.entries(res.headers).map(([k, v]) => [k, [v ?? ''].flat().join(',')]));
          resolve({ status: res.statusCode ?? 0, headers, body: text });
        });
        res.on('error', (err) => fail(err.message, 'other', err));
      },
    );
    req.on('socket', (sock) => {
      const connectTimer = setTimeout(() => fail(`connect timed out after ${o.connectMs} ms`, 'timeout'), o.connectMs);
      sock.once('connect', () => clearTimeout(connectTimer));
      sock.once('close', () => clearTimeout(connectTimer));
    });
    req.on('error', (err: NodeJS.ErrnoException) => fail(err.code ?? err.message, reasonOfCode(err.code), err));
    req.end(o.body);
  });
}

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

export const nodeRuntime: Runtime = { run: nodeRunner, request, lockShared, sha256Hex };
