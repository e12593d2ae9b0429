/// <reference types="bun-types" />
/**
 * The Bun binary's HTTP client: one HTTP/1.1 request to ferryd over its unix socket, made of libc calls
 * (Bun's fetch costs every exec ~2 MiB and ~0.4 ms of CPU: docs/shipping.md). The request is written when
 * it is made; the answer is read, blocking this thread, only when asked for, so the caller works while
 * ferryd does (ADD's veth pair, CHECK's reads of the pod).
 */
import { ERRNO, errno, errnoError, libc, POLLIN, POLLOUT, pollUntil } from '@ferry/sys/libc';
import { concatBytes, utf8Encode } from '@ferry/sys/utf8';
import { encodeRequest, HttpProtocolError, parseResponse } from './http1';
import type { HttpResponse, InFlight, RequestOptions } from './request';
import { failedCall, timedOut, UnreachableError } from './request';

const AF_UNIX = 1;
const SOCK_STREAM = 1;
const SOCK_CLOEXEC = 0o2000000;
const SOL_SOCKET = 1;
const SO_SNDTIMEO = 21;
const MSG_DONTWAIT = 0x40;
const MSG_NOSIGNAL = 0x4000;
const { EAGAIN, EINTR, ENAMETOOLONG } = ERRNO;
/** sun_path's size in struct sockaddr_un, its NUL included. */
const SUN_PATH_MAX = 108;
/** ferryd's answers are a few KiB; a runaway peer is cut off here rather than read into memory. */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

/** A wait that ran out: connect's own timeout (its length given), or else the request's deadline. */
class OutOfTime extends Error {
  readonly connectMs: number | undefined;
  constructor(connectMs?: number) {
    super('out of time');
    this.connectMs = connectMs;
  }
}

export function requestOverLibc(o: RequestOptions): InFlight<HttpResponse> {
  // The deadline counts from now: the caller's work between the send and the answer is part of the wait.
  const until = performance.now() + o.deadlineMs;
  const sent = send(o, until);
  let answer: Promise<HttpResponse> | undefined;
  return { answer: () => (answer ??= answerOf(o, sent, until)) };
}

/** The socket with the whole request written, or why there is none. */
function send(o: RequestOptions, until: number): number | { failed: unknown } {
  let fd: number | undefined;
  try {
    fd = connectTo(o.socket, Math.min(o.connectMs, o.deadlineMs));
    sendAll(fd, encodeRequest(o), until);
    return fd;
  } catch (err) {
    if (fd !== undefined) libc().close(fd);
    return { failed: err };
  }
}

async function answerOf(o: RequestOptions, sent: number | { failed: unknown }, until: number): Promise<HttpResponse> {
  if (typeof sent !== 'number') throw unreachable(o, sent.failed);
  try {
    return receive(sent, until);
  } catch (err) {
    throw unreachable(o, err);
  } finally {
    libc().close(sent);
  }
}

/**
 * A connected socket. It is blocking, with a send timeout, for connect(2): when ferryd's accept backlog is
 * full (frozen or swamped), a unix connect waits in the kernel until ferryd accepts or the timeout ends,
 * where a non-blocking one fails with EAGAIN at once and poll(2) cannot wait for room (it reports the
 * unconnected socket writable). Sends and receives then pass MSG_DONTWAIT and wait in poll(2).
 */
function connectTo(path: string, waitMs: number): number {
  const c = libc();
  const pathBytes = utf8Encode(path);
  if (pathBytes.length >= SUN_PATH_MAX) throw errnoError('connect', path, ENAMETOOLONG);
  // struct sockaddr_un: sa_family_t (u16, little-endian here), then the NUL-terminated path.
  const addr = new Uint8Array(2 + SUN_PATH_MAX);
  addr[0] = AF_UNIX;
  addr.set(pathBytes, 2);
  const fd = c.socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw errnoError('socket');
  try {
    // A zero timeout would mean none at all.
    const ms = Math.max(1, Math.round(waitMs));
    const until = performance.now() + ms;
    for (;;) {
      const left = Math.max(1, Math.round(until - performance.now()));
      // struct timeval: two 64-bit fields, written as little-endian u32 pairs (no BigInt).
      const timeval = new Uint32Array([Math.floor(left / 1000), 0, (left % 1000) * 1000, 0]);
      if (c.setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, timeval, timeval.byteLength) !== 0) throw errnoError('setsockopt');
      if (c.connect(fd, addr, addr.length) === 0) return fd;
      const n = errno();
      // A unix connect interrupted by a signal left nothing half-done: it is made again, in the time left.
      if (n === EINTR && performance.now() < until) continue;
      if (n === EAGAIN || n === EINTR) throw new OutOfTime(ms);
      throw errnoError('connect', path, n);
    }
  } catch (err) {
    c.close(fd);
    throw err;
  }
}

function sendAll(fd: number, bytes: Uint8Array, until: number): void {
  let at = 0;
  while (at < bytes.length) {
    const n = Number(libc().send(fd, bytes.subarray(at), bytes.length - at, MSG_DONTWAIT | MSG_NOSIGNAL));
    if (n >= 0) {
      at += n;
      continue;
    }
    const e = errno();
    if (e === EAGAIN) waitFor(fd, POLLOUT, until);
    else if (e !== EINTR) throw errnoError('send', undefined, e);
  }
}

/** Reads until `parseResponse` has a whole answer; the connection's end completes an unframed one. */
function receive(fd: number, until: number): HttpResponse {
  const chunk = new Uint8Array(64 * 1024);
  let got: Uint8Array = new Uint8Array(0);
  for (;;) {
    waitFor(fd, POLLIN, until);
    const n = Number(libc().recv(fd, chunk, chunk.length, MSG_DONTWAIT));
    if (n < 0) {
      const e = errno();
      if (e === EINTR || e === EAGAIN) continue;
      throw errnoError('recv', undefined, e);
    }
    if (n > 0) got = concatBytes([got, chunk.subarray(0, n)]);
    if (got.length > MAX_ANSWER_BYTES)
      throw new HttpProtocolError(`the answer is larger than ${MAX_ANSWER_BYTES} bytes`);
    const answer = parseResponse(got, n === 0);
    if (answer !== undefined) return answer;
  }
}

/** Waits until `fd` is ready for `events` (or has an error or hang-up to report), at most until `until`. */
function waitFor(fd: number, events: number, until: number): void {
  // An answer that came while the caller worked is reported even when the time is up.
  if (!pollUntil(fd, events, until)) throw new OutOfTime();
}

function unreachable(o: RequestOptions, err: unknown): UnreachableError {
  if (err instanceof OutOfTime) {
    return err.connectMs === undefined
      ? timedOut('answer', o.deadlineMs, err)
      : timedOut('connect', err.connectMs, err);
  }
  if (err instanceof HttpProtocolError)
    return new UnreachableError(`bad answer: ${err.message}`, 'other', { cause: err });
  return failedCall(err);
}
