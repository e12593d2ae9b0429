/**
 * The shim's seam to its runtime. The shipped binary is compiled by Bun, whose own APIs start in a few
 * milliseconds while its Node-compatibility layers (node:http, child_process) cost tens (docs/shipping.md);
 * tests that run sources use Node. Everything that differs between the two lives behind this interface.
 */
import type { Runner } from '@ferry/net';
import type { RtnlSys } from '@ferry/net/rtnetlink';
import type { Sha256Hex } from '@ferry/shared-types/host-veth';

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
 * Why ferryd could not be reached. `absent` (no socket file) and `refused` (a socket file nobody accepts
 * on, as a killed ferryd leaves behind) mean no ferryd is running: no wait can help. `timeout` means
 * something accepted or kept the connection but did not answer in time (frozen, overloaded).
 */
export type UnreachableReason = 'absent' | 'refused' | 'timeout' | 'other';

/** ferryd could not be reached: no socket, refused, or no answer before the deadline. */
export class UnreachableError extends Error {
  readonly reason: UnreachableReason;
  constructor(message: string, reason: UnreachableReason, options?: ErrorOptions) {
    super(message, options);
    this.name = 'UnreachableError';
    this.reason = reason;
  }
}

/** The reason behind a failed connect(2) on a unix socket, by its errno code. */
export function reasonOfCode(code: string | undefined): UnreachableReason {
  if (code === 'ENOENT' || code === 'ENOTDIR') return 'absent';
  if (code === 'ECONNREFUSED') return 'refused';
  if (code === 'ETIMEDOUT') return 'timeout';
  return 'other';
}

export interface RequestOptions {
  socket: string;
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  /** Header fields to send besides the framing (names and values from our own code, never from input). */
  headers?: Readonly<Record<string, string>>;
  body?: string;
  /** Time to establish the connection. */
  connectMs: number;
  /** Total time, response included. */
  deadlineMs: number;
}

/** Releases a lock taken by lockShared. */
export type Unlock = () => void;

export interface Runtime {
  /** Spawns a process without a shell (used by @ferry/net). */
  run: Runner;
  /**
   * The system calls of rtnetlink, where the runtime has them (the Bun binary): the links of ADD, CHECK and
   * DEL then change without `ip` execs.
   */
  rtnl?: RtnlSys;
  /**
   * Sends one HTTP request over a unix socket now. Never throws: its answer throws UnreachableError when
   * ferryd cannot be reached (the send's own failures, such as no socket, included).
   */
  request(opts: RequestOptions): InFlight<HttpResponse>;
  /**
   * A shared flock(2) on `path` (created if missing), waiting at most `timeoutMs`; undefined when it
   * could not be had in time. The kernel drops it if the process dies.
   */
  lockShared(path: string, timeoutMs: number): Promise<Unlock | undefined>;
  /** SHA-256 for names derived from an attachment (Bun's own hasher: node:crypto costs ~2 ms to load). */
  sha256Hex: Sha256Hex;
}

/** Polls a non-blocking lock attempt every 10 ms until it succeeds or time runs out. */
export async function pollLock(tryLock: () => boolean, timeoutMs: number): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (tryLock()) return true;
    if (Date.now() >= until) return false;
    await new Promise((r) => setTimeout(r, 10));
  }
}
