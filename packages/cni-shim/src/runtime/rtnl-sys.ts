/// <reference types="bun-types" />
/**
 * The system calls behind @ferry/net's rtnetlink, through bun:ffi (neither Bun nor Node has netlink
 * sockets or setns). libc is opened on first use (~0.5 ms), so commands that never touch a link pay
 * nothing.
 */
import type * as Ffi from 'bun:ffi';
import { type RtnlSys, SysError } from '@ferry/net/rtnetlink';

const AF_NETLINK = 16;
const SOCK_RAW = 3;
const SOCK_CLOEXEC = 0o2000000;
const NETLINK_ROUTE = 0;
const CLONE_NEWNET = 0x40000000;
const MSG_PEEK = 0x2;
const MSG_TRUNC = 0x20;
const SOL_NETLINK = 270;
const NETLINK_GET_STRICT_CHK = 12;
const ONE = new Int32Array([1]);

function openLibc() {
  // Required here, not imported: evaluating bun:ffi costs every run ~0.3 ms, and VERSION, STATUS, GC and the
  // daemon-down paths never need it.
  const { dlopen, FFIType } = require('bun:ffi') as typeof Ffi;
  return dlopen('libc.so.6', {
    socket: { args: [FFIType.i32, FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    send: { args: [FFIType.i32, FFIType.ptr, FFIType.u64, FFIType.i32], returns: FFIType.i64_fast },
    recv: { args: [FFIType.i32, FFIType.ptr, FFIType.u64, FFIType.i32], returns: FFIType.i64_fast },
    close: { args: [FFIType.i32], returns: FFIType.i32 },
    open: { args: [FFIType.cstring, FFIType.i32], returns: FFIType.i32 },
    setns: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    strerror: { args: [FFIType.i32], returns: FFIType.cstring },
    setsockopt: { args: [FFIType.i32, FFIType.i32, FFIType.i32, FFIType.ptr, FFIType.u32], returns: FFIType.i32 },
    __errno_location: { args: [], returns: FFIType.ptr },
  }).symbols;
}

let libc: ReturnType<typeof openLibc> | undefined;
const lib = () => {
  libc ??= openLibc();
  return libc;
};

function fail(what: string): never {
  const c = lib();
  const p = c.__errno_location();
  const errno = p ? (require('bun:ffi') as typeof Ffi).read.i32(p, 0) : 0;
  throw new SysError(errno, `${what}: ${String(c.strerror(errno))}`);
}

function netlinkSocket(): number {
  const fd = lib().socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) fail('open a netlink socket');
  return fd;
}

/**
 * setns(2) moves only the calling thread, and JavaScript runs on this one: the socket is created inside
 * the pod's namespace and the thread goes straight back. A socket keeps the namespace it was born in.
 */
function socketIn(netnsFd: number): number {
  const c = lib();
  const own = c.open(Buffer.from('/proc/thread-self/ns/net\0'), 0);
  if (own < 0) fail("open this thread's network namespace");
  try {
    if (c.setns(netnsFd, CLONE_NEWNET) !== 0) fail('enter the network namespace');
    try {
      return netlinkSocket();
    } finally {
      // Staying in the pod's namespace would point every later node-side change at the pod.
      if (c.setns(own, CLONE_NEWNET) !== 0) {
        process.stderr.write('ferry-cni: cannot return to the node network namespace\n');
        process.abort();
      }
    }
  } finally {
    c.close(own);
  }
}

let recvBuf = Buffer.alloc(32 * 1024);

export const rtnlSys: RtnlSys = {
  socket: (netnsFd) => (netnsFd === undefined ? netlinkSocket() : socketIn(netnsFd)),
  send(fd, msg) {
    if (lib().send(fd, msg, msg.length, 0) !== msg.length) fail('send a netlink message');
  },
  recv(fd) {
    // A datagram larger than the buffer would be cut short (a dump of links with many VFs): peek at its
    // real length first (MSG_TRUNC) and grow the buffer to fit.
    const size = Number(lib().recv(fd, recvBuf, recvBuf.length, MSG_PEEK | MSG_TRUNC));
    if (size < 0) fail('receive a netlink answer');
    if (size > recvBuf.length) recvBuf = Buffer.alloc(size);
    const n = Number(lib().recv(fd, recvBuf, recvBuf.length, 0));
    if (n < 0) fail('receive a netlink answer');
    return recvBuf.subarray(0, n);
  },
  close(fd) {
    lib().close(fd);
  },
  strerror: (errno) => String(lib().strerror(errno)),
  strictCheck: (fd) => lib().setsockopt(fd, SOL_NETLINK, NETLINK_GET_STRICT_CHK, ONE, 4) === 0,
};
