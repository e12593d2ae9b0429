/**
 * rtnetlink messages as bytes (linux/netlink.h, linux/rtnetlink.h, linux/if_link.h): encoding of the
 * requests Ferry sends and decoding of the kernel's answers. Pure code, no I/O. Netlink is in host byte
 * order; Ferry's nodes (x86-64, arm64) are little-endian.
 */

export const RTM_NEWLINK = 16;
export const RTM_DELLINK = 17;
export const RTM_GETLINK = 18;
export const RTM_NEWADDR = 20;
export const RTM_GETADDR = 22;
export const RTM_NEWROUTE = 24;
export const RTM_GETROUTE = 26;
export const RTM_NEWNEIGH = 28;
const NLMSG_ERROR = 2;
export const NLMSG_DONE = 3;

export const NLM_F_REQUEST = 0x1;
export const NLM_F_ACK = 0x4;
/** NLM_F_ROOT | NLM_F_MATCH: every object of the kind. */
export const NLM_F_DUMP = 0x300;
export const NLM_F_REPLACE = 0x100;
export const NLM_F_EXCL = 0x200;
export const NLM_F_CREATE = 0x400;

const AF_INET = 2;
export const AF_INET6 = 10;
export const IFF_UP = 0x1;
const IFF_LOWER_UP = 0x10000;

export const IFLA_ADDRESS = 1;
export const IFLA_IFNAME = 3;
export const IFLA_MTU = 4;
export const IFLA_IFALIAS = 20;
export const IFLA_LINKINFO = 18;
export const IFLA_AF_SPEC = 26;
export const IFLA_NET_NS_FD = 28;
export const IFLA_EXT_MASK = 29;
/** Leave the counters out of link answers: nothing here reads them, and a node has hundreds of links. */
export const RTEXT_FILTER_SKIP_STATS = 1 << 3;
export const IFLA_INFO_KIND = 1;
export const IFLA_INFO_DATA = 2;
export const VETH_INFO_PEER = 1;
export const IFLA_INET6_ADDR_GEN_MODE = 8;
export const IN6_ADDR_GEN_MODE = { eui64: 0, none: 1 } as const;

export const IFA_ADDRESS = 1;
export const IFA_LOCAL = 2;
export const IFA_F_NODAD = 0x2;

export const RTA_DST = 1;
export const RTA_OIF = 4;
export const RTA_GATEWAY = 5;
const RTA_TABLE = 15;
const RTA_PREF = 20;
const RT_TABLE_MAIN = 254;
/** What `ip route add` sets: a route the administrator added. */
const RTPROT_BOOT = 3;
export const RT_SCOPE_UNIVERSE = 0;
export const RT_SCOPE_LINK = 253;
const RTN_UNICAST = 1;

export const NDA_DST = 1;
export const NDA_LLADDR = 2;
export const NUD_PERMANENT = 0x80;

/** A netlink attribute: its type and either its payload or nested attributes. */
export type Attr = readonly [type: number, value: Uint8Array | readonly Attr[]];

const align4 = (n: number) => (n + 3) & ~3;

/** Attributes as bytes, each padded to 4 bytes; nested lists become nested attributes. */
export function encodeAttrs(attrs: readonly Attr[]): Buffer {
  const parts: Buffer[] = [];
  for (const [type, value] of attrs) {
    const payload = value instanceof Uint8Array ? value : encodeAttrs(value);
    const b = Buffer.alloc(align4(4 + payload.length));
    b.writeUInt16LE(4 + payload.length, 0);
    b.writeUInt16LE(type, 2);
    b.set(payload, 4);
    parts.push(b);
  }
  return Buffer.concat(parts);
}

/** One request: nlmsghdr, the family header (a multiple of 4 bytes) and the attributes. */
export function encodeMessage(type: number, flags: number, seq: number, header: Buffer, attrs: readonly Attr[]) {
  const body = Buffer.concat([header, encodeAttrs(attrs)]);
  const b = Buffer.alloc(16 + body.length);
  b.writeUInt32LE(b.length, 0);
  b.writeUInt16LE(type, 4);
  b.writeUInt16LE(flags, 6);
  b.writeUInt32LE(seq, 8);
  body.copy(b, 16);
  return b;
}

/** struct ifinfomsg. */
export function ifinfomsg(index = 0, flags = 0, change = 0): Buffer {
  const b = Buffer.alloc(16);
  b.writeInt32LE(index, 4);
  b.writeUInt32LE(flags, 8);
  b.writeUInt32LE(change, 12);
  return b;
}

/** struct ifaddrmsg. */
export function ifaddrmsg(family: number, prefixlen: number, flags: number, index: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeUInt8(family, 0);
  b.writeUInt8(prefixlen, 1);
  b.writeUInt8(flags, 2);
  b.writeUInt32LE(index, 4);
  return b;
}

/** struct rtmsg for a unicast route of the main table. */
export function rtmsg(family: number, dstLen: number, scope: number): Buffer {
  const b = Buffer.alloc(12);
  b.writeUInt8(family, 0);
  b.writeUInt8(dstLen, 1);
  b.writeUInt8(RT_TABLE_MAIN, 4);
  b.writeUInt8(RTPROT_BOOT, 5);
  b.writeUInt8(scope, 6);
  b.writeUInt8(RTN_UNICAST, 7);
  return b;
}

/** struct ndmsg. */
export function ndmsg(family: number, index: number, state: number): Buffer {
  const b = Buffer.alloc(12);
  b.writeUInt8(family, 0);
  b.writeInt32LE(index, 4);
  b.writeUInt16LE(state, 8);
  return b;
}

export const u8 = (n: number) => Uint8Array.of(n);
export function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n, 0);
  return b;
}
export const str = (s: string) => Buffer.from(`${s}\0`);

/** "ee:ee:ee:ee:ee:ee" → 6 bytes. */
export function macBytes(mac: string): Buffer {
  return Buffer.from(mac.split(':').map((h) => Number.parseInt(h, 16)));
}

function macText(b: Uint8Array): string {
  return [...b].map((x) => x.toString(16).padStart(2, '0')).join(':');
}

/** An IPv4 or IPv6 address (no prefix) → its family and bytes in network order. */
export function ipBytes(ip: string): { family: number; bytes: Buffer } {
  if (!ip.includes(':')) return { family: AF_INET, bytes: Buffer.from(ip.split('.').map(Number)) };
  const [head = '', tail] = ip.split('::');
  const groups = (s: string) => (s === '' ? [] : s.split(':'));
  const h = groups(head);
  const t = tail === undefined ? [] : groups(tail);
  const all = [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
  const b = Buffer.alloc(16);
  all.forEach((g, i) => {
    b.writeUInt16BE(Number.parseInt(g, 16), i * 2);
  });
  return { family: AF_INET6, bytes: b };
}

/** "10.0.0.5/32" → address, family and prefix length (a bare address is a host prefix). */
export function parseCidr(cidr: string): { family: number; bytes: Buffer; prefixlen: number } {
  const [ip = '', len] = cidr.split('/');
  const a = ipBytes(ip);
  return { ...a, prefixlen: len === undefined ? a.bytes.length * 8 : Number(len) };
}

/** One message of an answer. */
export interface Reply {
  type: number;
  seq: number;
  payload: Buffer;
}

export function decodeMessages(buf: Buffer): Reply[] {
  const out: Reply[] = [];
  for (let off = 0; off + 16 <= buf.length; ) {
    const len = buf.readUInt32LE(off);
    if (len < 16 || off + len > buf.length) break;
    out.push({
      type: buf.readUInt16LE(off + 4),
      seq: buf.readUInt32LE(off + 8),
      payload: buf.subarray(off + 16, off + len),
    });
    off += align4(len);
  }
  return out;
}

/** The errno of an NLMSG_ERROR (0 for an ACK); undefined for any other message. */
export function errnoOf(r: Reply): number | undefined {
  return r.type === NLMSG_ERROR ? 0 - r.payload.readInt32LE(0) : undefined;
}

function decodeAttrs(b: Buffer): Map<number, Buffer> {
  const m = new Map<number, Buffer>();
  for (let off = 0; off + 4 <= b.length; ) {
    const len = b.readUInt16LE(off);
    if (len < 4) break;
    // The top bits are NLA_F_NESTED and NLA_F_NET_BYTEORDER.
    m.set(b.readUInt16LE(off + 2) & 0x3fff, b.subarray(off + 4, off + len));
    off += align4(len);
  }
  return m;
}

/** A link as `ip -j link show` shows the fields Ferry reads (IpLinkSchema). */
export interface RtnlLink {
  ifindex: number;
  ifname: string;
  address?: string;
  mtu?: number;
  flags: string[];
}

/** An RTM_NEWLINK answer → the link. */
export function decodeLink(payload: Buffer): RtnlLink {
  const flags = payload.readUInt32LE(8);
  const attrs = decodeAttrs(payload.subarray(16));
  const name = attrs.get(IFLA_IFNAME);
  const mac = attrs.get(IFLA_ADDRESS);
  const mtu = attrs.get(IFLA_MTU);
  return {
    ifindex: payload.readInt32LE(4),
    ifname: name ? name.subarray(0, name.indexOf(0) < 0 ? name.length : name.indexOf(0)).toString() : '',
    ...(mac ? { address: macText(mac) } : {}),
    ...(mtu ? { mtu: mtu.readUInt32LE(0) } : {}),
    flags: [...(flags & IFF_UP ? ['UP'] : []), ...(flags & IFF_LOWER_UP ? ['LOWER_UP'] : [])],
  };
}

/** Network-order address bytes → text, IPv6 compressed as RFC 5952 (and iproute2) write it. */
export function ipText(b: Uint8Array): string {
  if (b.length === 4) return [...b].join('.');
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((b[i] ?? 0) << 8) | (b[i + 1] ?? 0));
  // The longest run of two or more zero groups (the first of equal runs) becomes "::".
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) [best, bestLen] = [i, j - i];
    i = j === i ? i + 1 : j;
  }
  const hex = (gs: number[]) => gs.map((g) => g.toString(16)).join(':');
  if (best < 0) return hex(groups);
  return `${hex(groups.slice(0, best))}::${hex(groups.slice(best + bestLen))}`;
}

/** One address as `ip -j addr` shows it, with the index of its link. */
export interface RtnlAddr {
  index: number;
  family: 'inet' | 'inet6';
  local: string;
  prefixlen: number;
  scope: string;
}

const SCOPES: Record<number, string> = { 0: 'global', 200: 'site', 253: 'link', 254: 'host', 255: 'nowhere' };

/** An RTM_NEWADDR answer → the address (IFA_LOCAL where there is one, as ip's `local`). */
export function decodeAddr(payload: Buffer): RtnlAddr {
  const family = payload.readUInt8(0);
  const scope = payload.readUInt8(3);
  const attrs = decodeAttrs(payload.subarray(8));
  const local = attrs.get(IFA_LOCAL) ?? attrs.get(IFA_ADDRESS) ?? Buffer.alloc(family === AF_INET6 ? 16 : 4);
  return {
    index: payload.readUInt32LE(4),
    family: family === AF_INET6 ? 'inet6' : 'inet',
    local: ipText(local),
    prefixlen: payload.readUInt8(1),
    scope: SCOPES[scope] ?? String(scope),
  };
}

/** A route as `ip -j route show table all` shows it, with its output interface's index. */
export interface RtnlRoute {
  dst: string;
  gateway?: string;
  oif?: number;
  table: string;
  type: string;
  scope: string;
  protocol: string;
  pref?: string;
}

const TABLES: Record<number, string> = { 253: 'default', 254: 'main', 255: 'local' };
const TYPES: Record<number, string> = {
  1: 'unicast',
  2: 'local',
  3: 'broadcast',
  4: 'anycast',
  5: 'multicast',
  6: 'blackhole',
  7: 'unreachable',
  8: 'prohibit',
  9: 'throw',
  10: 'nat',
};
const PROTOCOLS: Record<number, string> = { 2: 'kernel', 3: 'boot', 4: 'static' };
const PREFS: Record<number, string> = { 0: 'medium', 1: 'high', 3: 'low' };

/** An RTM_NEWROUTE answer → the route; dst is "default", a bare address for a host route, or a CIDR. */
export function decodeRoute(payload: Buffer): RtnlRoute {
  const family = payload.readUInt8(0);
  const dstLen = payload.readUInt8(1);
  const attrs = decodeAttrs(payload.subarray(12));
  const dst = attrs.get(RTA_DST);
  const gw = attrs.get(RTA_GATEWAY);
  const oif = attrs.get(RTA_OIF);
  const table = attrs.get(RTA_TABLE)?.readUInt32LE(0) ?? payload.readUInt8(4);
  const pref = attrs.get(RTA_PREF);
  const full = family === AF_INET6 ? 128 : 32;
  return {
    dst: dstLen === 0 || !dst ? 'default' : dstLen === full ? ipText(dst) : `${ipText(dst)}/${dstLen}`,
    ...(gw ? { gateway: ipText(gw) } : {}),
    ...(oif ? { oif: oif.readUInt32LE(0) } : {}),
    table: TABLES[table] ?? String(table),
    type: TYPES[payload.readUInt8(7)] ?? String(payload.readUInt8(7)),
    scope: SCOPES[payload.readUInt8(6)] ?? String(payload.readUInt8(6)),
    protocol: PROTOCOLS[payload.readUInt8(5)] ?? String(payload.readUInt8(5)),
    ...(pref ? { pref: PREFS[pref.readUInt8(0)] ?? String(pref.readUInt8(0)) } : {}),
  };
}
