/**
 * The Node HTTP client of every Ferry program that runs on Node: the shim's Node runtime, ferryctl (to
 * ferryd and to the Kubernetes API), ferryd's hand-over and the tests. node:http and node:https, with
 * the promises of request.ts: the connect timeout apart from the total deadline, failures as
 * UnreachableError with their reason, the request sent at once and its answer awaited only when asked for.
 *
 * Node's own client, not undici: undici compiles its HTTP parser (WebAssembly) in every process that
 * makes a request. One request over ferryd's socket from a fresh process cost 0.40 CPU-s with undici and
 * 0.08 with node:http (a whole ferryctl call: 0.65 and 0.15). node:http's parser is built into Node.
 */
import { type ClientRequest, request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
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

export function requestOverNode(o: NodeRequestOptions): InFlight<HttpResponse> {
  const answer = exchange(o);
  // Asked for later (ADD and CHECK work meanwhile): a failure before that is not an unhandled rejection.
  answer.catch(() => undefined);
  return { answer: () => answer };
}

function exchange(o: NodeRequestOptions): Promise<HttpResponse> {
  return new Promise((resolve, reject) => {
    const headers = { ...o.headers, ...(o.body !== undefined ? { 'content-type': 'application/json' } : {}) };
    // No agent: one connection per request, as the libc client makes, and nothing pooled keeps the process alive.
    const common = { method: o.method, path: o.path, headers, agent: false } as const;
    let req: ClientRequest;
    if ('socket' in o) req = httpRequest({ ...common, socketPath: o.socket });
    else {
      const url = new URL(o.origin);
      const at = { ...common, hostname: url.hostname.replace(/^\[|\]$/g, ''), port: url.port };
      req = url.protocol === 'https:' ? httpsRequest({ ...at, ...(o.ca ? { ca: o.ca } : {}) }) : httpRequest(at);
    }
    let settled = false;
    const timers: NodeJS.Timeout[] = [];
    const fail = (err: UnreachableError) => {
      if (settled) return;
      settled = true;
      for (const t of timers) clearTimeout(t);
      req.destroy();
      reject(err);
    };
    timers.push(setTimeout(() => fail(timedOut('answer', o.deadlineMs)), o.deadlineMs));
    req.once('socket', (sock: Socket) => {
      if (!sock.connecting) return;
      const connect = setTimeout(() => fail(timedOut('connect', o.connectMs)), o.connectMs);
      timers.push(connect);
      sock.once('connect', () => clearTimeout(connect));
    });
    req.on('error', (err) => fail(unreachable(err)));
    req.once('response', (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', (err) => fail(unreachable(err)));
      res.once('end', () => {
        if (settled) return;
        settled = true;
        for (const t of timers) clearTimeout(t);
        const body = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers: headersOf(res.rawHeaders), body });
      });
      // A body cut short ends in 'close' without 'end'.
      res.once('close', () => fail(closedEarly()));
    });
    req.end(o.body);
  });
}

/** Header fields by lower-case name, a repeated field's values joined with commas (as the libc client gives them). */
function headersOf(raw: readonly string[]): Map<string, string> {
  const fields = new Map<string, string>();
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = (raw[i] as string).toLowerCase();
    const prior = fields.get(name);
    fields.set(name, prior === undefined ? (raw[i + 1] as string) : `${prior},${raw[i + 1]}`);
  }
  return fields;
}

const closedEarly = () => new UnreachableError('bad answer: the connection closed before the whole answer', 'other');

/**
 * Node's words for a peer that hung up before answering ("socket hang up", code ECONNRESET) say nothing a
 * reader can act on; a system call's errno code (a connect's ENOENT, ECONNREFUSED…) is kept as it is.
 */
function unreachable(err: Error): UnreachableError {
  if (err.message === 'socket hang up' || err.message === 'aborted') return closedEarly();
  if ((err as { code?: string }).code?.startsWith('HPE_'))
    return new UnreachableError(`bad answer: ${err.message}`, 'other', { cause: err });
  return failedCall(err);
}
