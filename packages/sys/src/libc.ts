/// <reference types="bun-types" />
/**
 * glibc through bun:ffi: the one binding of the shipped ferry-cni binary (Bun only; Node never loads
 * it). Every system call the shim makes goes through here rather than node:fs or fetch: loading Bun's
 * node:fs costs each exec ~5 MiB of resident memory and ~1 ms of CPU, fetch another ~2 MiB
 * (bench/README.md), and libc is opened anyway for netlink. Opened on first use (~0.3 ms).
 */
import { dlopen, read, FFIType as T } from 'bun:ffi';
import { utf8Encode } from './utf8';

function openLibc() {
  return dlopen('libc.so.6', {
    open: { args: [T.cstring, T.i32, T.u32], returns: T.i32 },
    close: { args: [T.i32], returns: T.i32 },
    read: { args: [T.i32, T.ptr, T.u64], returns: T.i64_fast },
    write: { args: [T.i32, T.ptr, T.u64], returns: T.i64_fast },
    fsync: { args: [T.i32], returns: T.i32 },
    rename: { args: [T.cstring, T.cstring], returns: T.i32 },
    unlink: { args: [T.cstring], returns: T.i32 },
    mkdir: { args: [T.cstring, T.u32], returns: T.i32 },
    statx: { args: [T.i32, T.cstring, T.i32, T.u32, T.ptr], returns: T.i32 },
    opendir: { args: [T.cstring], returns: T.ptr },
    readdir64: { args: [T.ptr], returns: T.ptr },
    closedir: { args: [T.ptr], returns: T.i32 },
    flock: { args: [T.i32, T.i32], returns: T.i32 },
    socket: { args: [T.i32, T.i32, T.i32], returns: T.i32 },
    connect: { args: [T.i32, T.ptr, T.u32], returns: T.i32 },
    send: { args: [T.i32, T.ptr, T.u64, T.i32], returns: T.i64_fast },
    recv: { args: [T.i32, T.ptr, T.u64, T.i32], returns: T.i64_fast },
    poll: { args: [T.ptr, T.u64, T.i32], returns: T.i32 },
    getsockopt: { args: [T.i32, T.i32, T.i32, T.ptr, T.ptr], returns: T.i32 },
    setsockopt: { args: [T.i32, T.i32, T.i32, T.ptr, T.u32], returns: T.i32 },
    setns: { args: [T.i32, T.i32], returns: T.i32 },
    strerror: { args: [T.i32], returns: T.cstring },
    __errno_location: { args: [], returns: T.ptr },
  }).symbols;
}

let symbols: ReturnType<typeof openLibc> | undefined;

/** The libc functions, opened on first call. */
export function libc(): ReturnType<typeof openLibc> {
  symbols ??= openLibc();
  return symbols;
}

/** errno of the last failed call (read at once: the next libc call may change it). */
export function errno(): number {
  const p = libc().__errno_location();
  return p ? read.i32(p, 0) : 0;
}

/** The errno values callers test, by the names Node gives them (uv's); others read `E<number>`. */
export const ERRNO = {
  EPERM: 1,
  ENOENT: 2,
  EINTR: 4,
  EIO: 5,
  EBADF: 9,
  EAGAIN: 11,
  ENOMEM: 12,
  EACCES: 13,
  EBUSY: 16,
  EEXIST: 17,
  ENOTDIR: 20,
  EISDIR: 21,
  EINVAL: 22,
  ENFILE: 23,
  EMFILE: 24,
  EFBIG: 27,
  ENOSPC: 28,
  EROFS: 30,
  EPIPE: 32,
  ENAMETOOLONG: 36,
  ENOTEMPTY: 39,
  ELOOP: 40,
  ECONNRESET: 104,
  ETIMEDOUT: 110,
  ECONNREFUSED: 111,
  EINPROGRESS: 115,
  EDQUOT: 122,
} as const;

/** The name of errno `n`: looked up when an error is made, so a run that has none builds no table. */
export function errnoName(n: number): string {
  for (const [name, value] of Object.entries(ERRNO)) if (value === n) return name;
  return `E${n}`;
}

/** Makes `call` again while a signal interrupts it: its result, or -1 with errno set by the real failure. */
export function uninterrupted(call: () => number | bigint): number {
  for (;;) {
    const r = Number(call());
    if (r >= 0 || errno() !== ERRNO.EINTR) return r;
  }
}

/** poll(2)'s events: readable, writable. */
export const POLLIN = 1;
export const POLLOUT = 4;

/**
 * Waits until `fd` is ready for `events`, or has an error or a hang-up to report: false when the clock
 * (performance.now()) reaches `until` first. A signal does not end the wait early.
 */
export function pollUntil(fd: number, events: number, until: number): boolean {
  // struct pollfd: int fd, short events, short revents (little-endian: events is the low half).
  const pollfd = new Int32Array([fd, events]);
  for (;;) {
    const left = Math.ceil(until - performance.now());
    // A zero timeout still reports what is ready now.
    const n = libc().poll(pollfd, 1, Math.max(0, left));
    if (n > 0) return true;
    if (n < 0 && errno() !== ERRNO.EINTR) throw errnoError('poll');
    if (n === 0 && left <= 0) return false;
  }
}

/** An error shaped as Node's (code, errno, syscall, path), so callers handle both runtimes alike. */
export interface ErrnoError extends Error {
  code: string;
  errno: number;
  syscall: string;
  path?: string;
}

/** The error of the call that just failed: `ENOENT: no such file or directory, open '/x'`, as Node says it. */
export function errnoError(syscall: string, path?: string, n = errno()): ErrnoError {
  const code = errnoName(n);
  const where = path === undefined ? syscall : `${syscall} '${path}'`;
  const err = new Error(`${code}: ${String(libc().strerror(n)).toLowerCase()}, ${where}`) as ErrnoError;
  err.code = code;
  // Node's errno is negative (uv's convention).
  err.errno = -n;
  err.syscall = syscall;
  if (path !== undefined) err.path = path;
  return err;
}

/** A path as the NUL-terminated bytes libc takes. */
export const cstr = (s: string): Uint8Array => utf8Encode(`${s}\0`);
