/**
 * The Node HTTP client of every Ferry program that runs on Node: the shim's Node runtime, ferryctl (to
 * ferryd and to the Kubernetes API) and the tests. undici, Node's own fetch underneath, with the promises
 * of request.ts: the connect timeout apart from the total deadline, failures as UnreachableError with
 * their reason, the request sent at once and its answer awaited only when asked for.
 */
import { Client, errors } from 'undici';
import type { HttpResponse, InFlight, RequestOptions } from './request';
import { failedCall, timedOut, UnreachableError } from './request';

/** RequestOptions, or the same to an http(s) origin instead of a unix socket. */
export type NodeRequestOptions = Omit<RequestOptions, 'socket'> &
  (
    | { socket: string }
    | {
        /** `http://host:port` or `https://host:port`. */
        origin: string;
        /** PEM certificates to trust for an https origin, in place of Node's own. */
        ca?: string;
      }
  );

export function requestOverUndici(o: NodeRequestOptions): InFlight<HttpResponse> {
  const answer = exchange(o);
  // Asked for later (ADD and CHECK work meanwhile): a failure before that is not an unhandled rejection.
  answer.catch(() => undefined);
  return { answer: () => answer };
}

async function exchange(o: NodeRequestOptions): Promise<HttpResponse> {
  // One connection per request, as the libc client makes: nothing pooled keeps the process alive.
  const client =
    'socket' in o
      ? new Client('http://ferryd', { socketPath: o.socket, connect: { timeout: o.connectMs }, ...NO_IDLE_TIMEOUTS })
      : new Client(o.origin, { connect: { timeout: o.connectMs, ...(o.ca ? { ca: o.ca } : {}) }, ...NO_IDLE_TIMEOUTS });
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), o.deadlineMs);
  try {
    const res = await client.request({
      method: o.method,
      path: o.path,
      headers: { ...o.headers, ...(o.body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(o.body !== undefined ? { body: o.body } : {}),
      signal: deadline.signal,
    });
    const headers = new Map(Object.entries(res.headers).map(([k, v]) => [k, [v ?? ''].flat().join(',')]));
    return { status: res.statusCode, headers, body: await res.body.text() };
  } catch (err) {
    throw unreachable(o, err, deadline.signal.aborted);
  } finally {
    clearTimeout(timer);
    void client.destroy();
  }
}

/** undici's own timers measure silence between bytes; the deadline above is the one total limit. */
const NO_IDLE_TIMEOUTS = { headersTimeout: 0, bodyTimeout: 0 };

function unreachable(o: NodeRequestOptions, err: unknown, pastDeadline: boolean): UnreachableError {
  if (pastDeadline) return timedOut('answer', o.deadlineMs, err);
  if (err instanceof errors.ConnectTimeoutError) return timedOut('connect', o.connectMs, err);
  // undici's own errors say what went wrong in words ("other side closed"); a system call's, by errno code.
  if (err instanceof errors.UndiciError) return new UnreachableError(err.message, 'other', { cause: err });
  return failedCall(err);
}
