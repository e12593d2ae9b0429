/// <reference types="bun-types" />
/**
 * The system calls behind @ferry/net's rtnetlink, through the binary's one libc binding (neither Bun nor
 * Node has netlink sockets or setns).
 */

import { type RtnlSys, SysError } from '@ferry/net/rtnetlink';
import { cstr, errno, libc, uninterrupted } from '@ferry/sys/libc';

const AF_NETLINK = 16;
const SOCK_RAW = 3;
const SOCK_CLOEXEC = 0o2000000;
const O_CLOEXEC = 0o2000000;
const NETLINK_ROUTE = 0;
const CLONE_NEWNET = 0x40000000;
const MSG_PEEK = 0x2;
const MSG_TRUNC = 0x20;
const SOL_NETLINK = 270;
const NETLINK_GET_STRICT_CHK = 12;
const ONE = new Int32Array([1]);

function fail(what: string): never {
  const n = errno();
  throw new SysError(n, `${what}: ${String(libc().strerror(n))}`);
}

function netlinkSocket(): number {
  const fd = libc().socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) fail('open a netlink socket');
  return fd;
}

/**
 * setns(2) moves only the calling thread, and JavaScript runs on this one: the socket is created inside
 * the pod's namespace and the thread goes straight back. A socket keeps the namespace it was born in.
 */
function socketIn(netnsFd: number): number {
  const c = libc();
  const own = c.open(cstr('/proc/thread-self/ns/net'), O_CLOEXEC, 0);
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
    if (uninterrupted(() => libc().send(fd, msg, msg.length, 0)) !== msg.length) fail('send a netlink message');
  },
  recv(fd) {
    // A datagram larger than the buffer would be cut short (a dump of links with many VFs): peek at its
    // real length first (MSG_TRUNC) and grow the buffer to fit.
    const size = uninterrupted(() => libc().recv(fd, recvBuf, recvBuf.length, MSG_PEEK | MSG_TRUNC));
    if (size < 0) fail('receive a netlink answer');
    if (size > recvBuf.length) recvBuf = Buffer.alloc(size);
    const n = uninterrupted(() => libc().recv(fd, recvBuf, recvBuf.length, 0));
    if (n < 0) fail('receive a netlink answer');
    return recvBuf.subarray(0, n);
  },
  close(fd) {
    libc().close(fd);
  },
  strerror: (errno) => String(libc().strerror(errno)),
  strictCheck: (fd) => libc().setsockopt(fd, SOL_NETLINK, NETLINK_GET_STRICT_CHK, ONE, 4) === 0,
};
