/**
 * Link changes over rtnetlink, without iproute2: the shim's hot path (two `ip` execs were ~30% of an ADD).
 * The syscalls come from the runtime (bun:ffi in the shipped shim); everything else is here. A socket is
 * bound to the namespace it was created in, so the pod's side gets a socket created inside the pod's
 * netns, and the veth's peer is born there by file descriptor (IFLA_NET_NS_FD).
 */
import { closeSync, openSync } from '@ferry/files/fs';
import type { BatchOp, FdbBatch, IpBatch } from '../batch';
import type { FailedLine, IpBackend, Show } from '../ip';
import { kindOfErrno, NetError, type NetErrorKind } from '../net-error';
import { describeNetns, type Netns } from '../netns';
import {
  AF_INET6,
  type Attr,
  decodeAddr,
  decodeLink,
  decodeMessages,
  decodeRoute,
  encodeAttrs,
  encodeMessage,
  errnoOf,
  IFA_ADDRESS,
  IFA_F_NODAD,
  IFA_LOCAL,
  IFF_UP,
  IFLA_ADDRESS,
  IFLA_AF_SPEC,
  IFLA_EXT_MASK,
  IFLA_IFALIAS,
  IFLA_IFNAME,
  IFLA_INET6_ADDR_GEN_MODE,
  IFLA_INFO_DATA,
  IFLA_INFO_KIND,
  IFLA_LINKINFO,
  IFLA_MTU,
  IFLA_NET_NS_FD,
  IN6_ADDR_GEN_MODE,
  ifaddrmsg,
  ifinfomsg,
  ipBytes,
  macBytes,
  NDA_DST,
  NDA_LLADDR,
  NLM_F_ACK,
  NLM_F_CREATE,
  NLM_F_DUMP,
  NLM_F_EXCL,
  NLM_F_REPLACE,
  NLM_F_REQUEST,
  NLMSG_DONE,
  NUD_PERMANENT,
  ndmsg,
  parseCidr,
  RT_SCOPE_LINK,
  RT_SCOPE_UNIVERSE,
  RTA_DST,
  RTA_GATEWAY,
  RTA_OIF,
  RTEXT_FILTER_SKIP_STATS,
  RTM_DELLINK,
  RTM_GETADDR,
  RTM_GETLINK,
  RTM_GETROUTE,
  RTM_NEWADDR,
  RTM_NEWLINK,
  RTM_NEWNEIGH,
  RTM_NEWROUTE,
  type RtnlLink,
  rtmsg,
  str,
  u8,
  u32,
  VETH_INFO_PEER,
} from './message';

/** The system calls rtnetlink needs; the runtime provides them. */
export interface RtnlSys {
  /**
   * A NETLINK_ROUTE socket created inside the network namespace open as `netnsFd` (this thread's own
   * namespace when undefined), the thread back in its own namespace afterwards. Throws SysError.
   */
  socket(netnsFd?: number): number;
  /** Sends one message. Throws SysError. */
  send(fd: number, msg: Buffer): void;
  /** Receives one whole datagram, however large (the view is valid until the next call). Throws SysError. */
  recv(fd: number): Buffer;
  close(fd: number): void;
  strerror(errno: number): string;
  /**
   * Turns on NETLINK_GET_STRICT_CHK (Linux 4.20): the kernel then filters a dump by the request's
   * attributes instead of sending everything. False when it cannot (an older kernel).
   */
  strictCheck(fd: number): boolean;
}

/** A failed system call, with its errno. */
export class SysError extends Error {
  constructor(
    readonly errno: number,
    message: string,
  ) {
    super(message);
    this.name = 'SysError';
  }
}

/** A network namespace that could not be opened or entered (its errno says why). */
class NetnsUnavailable extends SysError {}

const ENOENT = 2;
const ENODEV = 19;
const EINVAL = 22;

/**
 * The kind of a failed call. Opening a namespace's path fails with ENOENT when nothing is there, entering
 * it (setns) with EINVAL when what is there is no network namespace; any other errno is the kernel's
 * answer to a request.
 */
function kindOf(err: SysError): NetErrorKind {
  if (err instanceof NetnsUnavailable) return err.errno === ENOENT || err.errno === EINVAL ? 'no-netns' : 'failed';
  return kindOfErrno(err.errno);
}

/** The ops carried out over rtnetlink; a batch with any other goes through iproute2. */
const SUPPORTED = new Set<BatchOp['op']>([
  'addVeth',
  'setAddrGenMode',
  'setUp',
  'setDown',
  'addAddress',
  'addRoute',
  'replaceNeigh',
  'showLink',
  'showAllAddrs',
  'showRoutes',
]);

/** One socket in one namespace, with the interface indexes it has looked up. */
class Conn {
  readonly #ifindex = new Map<string, number>();
  #seq = 0;

  constructor(
    readonly sys: RtnlSys,
    readonly fd: number,
  ) {}

  /** Sends a request and returns the kernel's answer to it; an NLMSG_ERROR with an errno throws SysError. */
  request(type: number, flags: number, header: Buffer, attrs: readonly Attr[]): Buffer | undefined {
    const seq = ++this.#seq;
    this.sys.send(this.fd, encodeMessage(type, flags | NLM_F_REQUEST, seq, header, attrs));
    for (;;) {
      for (const reply of decodeMessages(this.sys.recv(this.fd))) {
        if (reply.seq !== seq) continue;
        const errno = errnoOf(reply);
        if (errno === undefined) return Buffer.from(reply.payload);
        if (errno !== 0) throw new SysError(errno, this.sys.strerror(errno));
        return undefined;
      }
    }
  }

  /** Sends a dump request and collects every answer until NLMSG_DONE. */
  dump(type: number, header: Buffer, attrs: readonly Attr[] = []): Buffer[] {
    const seq = ++this.#seq;
    this.sys.send(this.fd, encodeMessage(type, NLM_F_REQUEST | NLM_F_DUMP, seq, header, attrs));
    const out: Buffer[] = [];
    for (;;) {
      for (const reply of decodeMessages(this.sys.recv(this.fd))) {
        if (reply.seq !== seq) continue;
        if (reply.type === NLMSG_DONE) return out;
        const errno = errnoOf(reply);
        if (errno !== undefined && errno !== 0) throw new SysError(errno, this.sys.strerror(errno));
        if (errno === undefined) out.push(Buffer.from(reply.payload));
      }
    }
  }

  /** Every link of the namespace. */
  links(): RtnlLink[] {
    return this.dump(RTM_GETLINK, ifinfomsg(), [[IFLA_EXT_MASK, u32(RTEXT_FILTER_SKIP_STATS)]]).map(decodeLink);
  }

  change(type: number, flags: number, header: Buffer, attrs: readonly Attr[]): void {
    this.request(type, flags | NLM_F_ACK, header, attrs);
  }

  getLink(name: string): RtnlLink {
    const payload = this.request(RTM_GETLINK, 0, ifinfomsg(), [
      [IFLA_IFNAME, str(name)],
      [IFLA_EXT_MASK, u32(RTEXT_FILTER_SKIP_STATS)],
    ]);
    if (!payload) throw new SysError(ENODEV, this.sys.strerror(ENODEV));
    const link = decodeLink(payload);
    this.#ifindex.set(name, link.ifindex);
    return link;
  }

  ifindex(name: string): number {
    return this.#ifindex.get(name) ?? this.getLink(name).ifindex;
  }
}

/**
 * Ip's backend over rtnetlink: the batches of the ops in SUPPORTED, the reads of one link and of routes,
 * and link deletion. Everything else goes to `iproute2`.
 */
export class Rtnetlink implements IpBackend {
  readonly #sys: RtnlSys;
  readonly #iproute2: IpBackend;

  constructor(sys: RtnlSys, iproute2: IpBackend) {
    this.#sys = sys;
    this.#iproute2 = iproute2;
  }

  async apply(ns: Netns, batch: IpBatch, what: string): Promise<unknown[]> {
    if (!batch.ops.every((o) => SUPPORTED.has(o.op))) return this.#iproute2.apply(ns, batch, what);
    const action = `${what} in ${describeNetns(ns)}`;
    return this.#withConn(ns, action, (conn) => {
      const out: unknown[] = [];
      for (const [index, op] of batch.ops.entries()) {
        try {
          const shown = this.#applyOp(conn, op);
          if (shown) out.push(shown);
        } catch (err) {
          if (!(err instanceof SysError)) throw err;
          const line = batch.lines[index]?.args.join(' ');
          throw new NetError(kindOf(err), `${action} (ip ${line})`, err.message, { failedLine: index });
        }
      }
      return out;
    });
  }

  applyEach(ns: Netns, batch: IpBatch | FdbBatch): Promise<FailedLine[]> {
    return this.#iproute2.applyEach(ns, batch);
  }

  async show(ns: Netns, query: Show, what: string): Promise<unknown[]> {
    const action = `${what} in ${describeNetns(ns)}`;
    switch (query.of) {
      case 'link':
        return this.#withConn(ns, action, (conn) => [[conn.getLink(query.dev)]]);
      case 'routes':
        return this.#withConn(ns, action, (conn) => [routesOf(conn, query.dev)]);
      default:
        return this.#iproute2.show(ns, query, what);
    }
  }

  routeTo(ns: Netns, dst: string): Promise<unknown[]> {
    return this.#iproute2.routeTo(ns, dst);
  }

  async deleteLink(ns: Netns, name: string): Promise<void> {
    this.#withConn(ns, `delete link ${name} in ${describeNetns(ns)}`, (conn) =>
      conn.change(RTM_DELLINK, 0, ifinfomsg(), [[IFLA_IFNAME, str(name)]]),
    );
  }

  /** `fn` on a socket in `ns`; a failed call, the socket's own included, becomes a NetError of `action`. */
  #withConn<T>(ns: Netns, action: string, fn: (conn: Conn) => T): T {
    let fd: number | undefined;
    try {
      fd = ns.kind === 'self' ? this.#sys.socket() : this.#socketIn(ns.path);
      return fn(new Conn(this.#sys, fd));
    } catch (err) {
      throw err instanceof SysError ? new NetError(kindOf(err), action, err.message) : err;
    } finally {
      if (fd !== undefined) this.#sys.close(fd);
    }
  }

  #socketIn(path: string): number {
    const nsFd = openNetns(this.#sys, path);
    try {
      return this.#sys.socket(nsFd);
    } catch (err) {
      throw err instanceof SysError ? new NetnsUnavailable(err.errno, err.message) : err;
    } finally {
      closeSync(nsFd);
    }
  }

  /** One op; a show returns its JSON document in `ip -j -d`'s shape (the fields Ferry reads). */
  #applyOp(conn: Conn, o: BatchOp): unknown[] | undefined {
    const CREATE = NLM_F_CREATE | NLM_F_EXCL;
    switch (o.op) {
      case 'addVeth': {
        const { spec } = o;
        const peerAttrs: Attr[] = [[IFLA_IFNAME, str(spec.peer.name)]];
        if (spec.peer.mac) peerAttrs.push([IFLA_ADDRESS, macBytes(spec.peer.mac)]);
        if (spec.peer.mtu) peerAttrs.push([IFLA_MTU, u32(spec.peer.mtu)]);
        const peerNs = spec.peer.netns ? openNetns(conn.sys, spec.peer.netns) : undefined;
        try {
          if (peerNs !== undefined) peerAttrs.push([IFLA_NET_NS_FD, u32(peerNs)]);
          const attrs: Attr[] = [[IFLA_IFNAME, str(spec.name)]];
          if (spec.mac) attrs.push([IFLA_ADDRESS, macBytes(spec.mac)]);
          if (spec.mtu) attrs.push([IFLA_MTU, u32(spec.mtu)]);
          // VETH_INFO_PEER carries a whole ifinfomsg followed by the peer's attributes.
          const peer = Buffer.concat([ifinfomsg(), encodeAttrs(peerAttrs)]);
          attrs.push([
            IFLA_LINKINFO,
            [
              [IFLA_INFO_KIND, str('veth')],
              [IFLA_INFO_DATA, [[VETH_INFO_PEER, peer]]],
            ],
          ]);
          conn.change(RTM_NEWLINK, CREATE, ifinfomsg(), attrs);
        } finally {
          if (peerNs !== undefined) closeSync(peerNs);
        }
        return undefined;
      }
      case 'setAddrGenMode':
        conn.change(RTM_NEWLINK, 0, ifinfomsg(), [
          [IFLA_IFNAME, str(o.dev)],
          [IFLA_AF_SPEC, [[AF_INET6, [[IFLA_INET6_ADDR_GEN_MODE, u8(IN6_ADDR_GEN_MODE[o.mode])]]]]],
        ]);
        return undefined;
      case 'setUp':
      case 'setDown': {
        const attrs: Attr[] = [[IFLA_IFNAME, str(o.dev)]];
        // The kernel takes the alias without a terminating NUL (dev_set_alias copies the length it is given).
        if (o.op === 'setUp' && o.alias !== undefined) attrs.push([IFLA_IFALIAS, Buffer.from(o.alias)]);
        conn.change(RTM_NEWLINK, 0, ifinfomsg(0, o.op === 'setUp' ? IFF_UP : 0, IFF_UP), attrs);
        return undefined;
      }
      case 'addAddress': {
        const a = parseCidr(o.cidr);
        conn.change(
          RTM_NEWADDR,
          CREATE,
          ifaddrmsg(a.family, a.prefixlen, o.nodad ? IFA_F_NODAD : 0, conn.ifindex(o.dev)),
          [
            [IFA_LOCAL, a.bytes],
            [IFA_ADDRESS, a.bytes],
          ],
        );
        return undefined;
      }
      case 'addRoute': {
        const r = o.route;
        const dst = parseCidr(r.dst);
        // As `ip route add`: a route without a gateway is on-link (scope link) unless told otherwise.
        const scope = r.scope === 'link' || (!r.scope && !r.via) ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE;
        const attrs: Attr[] = [];
        if (dst.prefixlen > 0) attrs.push([RTA_DST, dst.bytes]);
        if (r.via) attrs.push([RTA_GATEWAY, ipBytes(r.via).bytes]);
        attrs.push([RTA_OIF, u32(conn.ifindex(r.dev))]);
        conn.change(RTM_NEWROUTE, CREATE, rtmsg(dst.family, dst.prefixlen, scope), attrs);
        return undefined;
      }
      case 'replaceNeigh': {
        const dst = ipBytes(o.dst);
        conn.change(RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_REPLACE, ndmsg(dst.family, conn.ifindex(o.dev), NUD_PERMANENT), [
          [NDA_DST, dst.bytes],
          [NDA_LLADDR, macBytes(o.lladdr)],
        ]);
        return undefined;
      }
      case 'showLink':
        return [conn.getLink(o.dev)];
      case 'showAllAddrs': {
        const addrs = conn.dump(RTM_GETADDR, ifaddrmsg(0, 0, 0, 0)).map(decodeAddr);
        return conn.links().map((l) => ({
          ...l,
          addr_info: addrs.filter((a) => a.index === l.ifindex).map(({ index: _, ...a }) => a),
        }));
      }
      case 'showRoutes':
        return routesOf(conn);
      default:
        // supports() keeps every other op on the iproute2 path.
        throw new Error(`rtnetlink cannot apply ${o.op}`);
    }
  }
}

/**
 * Every route of every table and family, as `ip -j -d route show table all` shows it; with `dev`, only
 * the routes through that link, without dumping every link for the names (a node has hundreds).
 */
function routesOf(conn: Conn, dev?: string): unknown[] {
  const names = dev === undefined ? new Map(conn.links().map((l) => [l.ifindex, l.ifname])) : undefined;
  const only = dev === undefined ? undefined : conn.ifindex(dev);
  // One device's routes are filtered by the kernel when it can: a node with 110 pods has hundreds of
  // routes (CHECK read them all to keep one). The filter below stays for a kernel that cannot.
  const filter: Attr[] = only !== undefined && conn.sys.strictCheck(conn.fd) ? [[RTA_OIF, u32(only)]] : [];
  // An rtmsg of family 0: both families, every table.
  const out: unknown[] = [];
  for (const { oif, ...r } of conn.dump(RTM_GETROUTE, Buffer.alloc(12), filter).map(decodeRoute)) {
    if (only !== undefined && oif !== only) continue;
    const name = only !== undefined ? dev : oif === undefined ? undefined : names?.get(oif);
    out.push({ ...r, ...(name ? { dev: name } : {}) });
  }
  return out;
}

/** Opens a namespace's path; a failure is NetnsUnavailable with open(2)'s errno. */
function openNetns(sys: RtnlSys, path: string): number {
  try {
    return openSync(path, 'r');
  } catch (err) {
    if (!hasErrno(err)) throw err;
    // Node's errno and @ferry/files' are negative (libuv's convention).
    const errno = Math.abs(err.errno);
    throw new NetnsUnavailable(errno, `open network namespace ${path}: ${sys.strerror(errno)}`);
  }
}

const hasErrno = (err: unknown): err is { errno: number } =>
  typeof err === 'object' && err !== null && 'errno' in err && typeof err.errno === 'number';
