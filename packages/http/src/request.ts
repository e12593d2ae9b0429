/**
 * What every Ferry HTTP client promises, whichever runtime it runs on: the Bun binary's libc client
 * (client-libc.ts) and the Node one (client-node.ts). Pure: no I/O, nothing built at load, so the shim
 * pays nothing for importing it.
 */

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

export interface RequestOptions {
  /** The unix socket to connect to (ferryd's). */
  socket: string;
  method: Method;
  /** The request target: a path with its query, already percent-encoded. */
  path: string;
  /** Header fields to send besides the framing (names and values from our own code, never from input). */
  headers?: Readonly<Record<string, string>>;
  /** A JSON document, sent with its Content-Type and Content-Length. */
  body?: string;
  /** Time to establish the connection. */
  connectMs: number;
  /** Total time from the send, the answer's body included. */
  deadlineMs: number;
}

export interface HttpResponse {
  status: number;
  /** Header fields by lower-case name (a repeated field's values joined with commas). */
  headers: ReadonlyMap<string, string>;
  body: string;
}

/**
 * A request on its way: sent when it was made, its answer waited for only when asked for. ADD and CHECK
 * work while ferryd answers; the Bun binary's client reads the answer synchronously, so the wait must
 * happen where the caller asks, not whenever a promise chain happens to run. Asking again gives the
 * same answer.
 */
export interface InFlight<T> {
  answer(): Promise<T>;
}

/**
 * `sent`'s answer passed through `map` (which gets the answer's promise, so it sees a failure too), still
 * waited for only when asked for.
 */
export function mapAnswer<A, B>(sent: InFlight<A>, map: (answer: Promise<A>) => Promise<B>): InFlight<B> {
  let answer: Promise<B> | undefined;
  return { answer: () => (answer ??= map(sent.answer())) };
}

/**
 * Why the server could not be reached. `absent` (no socket file) and `refused` (a socket file nobody
 * accepts on, as a killed ferryd leaves behind) mean nothing is running there: no wait can help. `timeout`
 * means something accepted or kept the connection but did not answer in time (frozen, overloaded).
 */
export type UnreachableReason = 'absent' | 'refused' | 'timeout' | 'other';

/**
 * No answer: no socket, refused, no answer before the deadline, or an answer that broke HTTP. The message
 * is the reason alone (`ECONNREFUSED`, `no answer within 400 ms`): the caller says what it was asking.
 */
export class UnreachableError extends Error {
  readonly reason: UnreachableReason;
  constructor(why: string, reason: UnreachableReason, options?: ErrorOptions) {
    super(why, options);
    this.name = 'UnreachableError';
    this.reason = reason;
  }
}

/** A failed system call (a connect's ENOENT, ECONNREFUSED…) as UnreachableError: its errno code, its reason. */
export function failedCall(err: unknown): UnreachableError {
  const code = (err as { code?: string }).code;
  return new UnreachableError(code ?? (err as Error).message, reasonOfCode(code), { cause: err });
}

/** The reason behind a failed connect(2), by its errno code. */
function reasonOfCode(code: string | undefined): UnreachableReason {
  if (code === 'ENOENT' || code === 'ENOTDIR') return 'absent';
  if (code === 'ECONNREFUSED') return 'refused';
  if (code === 'ETIMEDOUT') return 'timeout';
  return 'other';
}

/** A request that ran out of time, `ms` long: in its connect (the connect timeout), or waiting for its answer. */
export function timedOut(during: 'connect' | 'answer', ms: number, cause?: unknown): UnreachableError {
  const why = during === 'connect' ? `connect timed out after ${ms} ms` : `no answer within ${ms} ms`;
  return new UnreachableError(why, 'timeout', { cause });
}
