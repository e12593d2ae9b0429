/**
 * Rtnetlink against a fake kernel: RtnlSys records every request it is sent, decoded, and answers from
 * the test's script with the bytes a kernel sends (acks, NLMSG_ERROR, dumps in several datagrams). The
 * real layer runs under Bun in real namespaces in test/e2e/rtnetlink.test.ts.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { IpBatch } from '../batch';
import { Ip, type IpBackend, type Show } from '../ip';
import { NetError } from '../net-error';
import { netnsAt, SELF } from '../netns';
import { encodeMessage, ifaddrmsg, ifinfomsg, ipBytes, macBytes, rtmsg, str, u32 } from './message';
import { Rtnetlink, type RtnlSys, SysError } from './rtnetlink';

// The kernel's numbers (linux/netlink.h, rtnetlink.h, if_link.h, if_addr.h, neighbour.h), written out
// here rather than taken from message.ts, so a wrong constant there cannot agree with itself.
const [NLMSG_ERROR, NLMSG_DONE, NLM_F_MULTI] = [2, 3, 0x2];
const [NLM_F_REQUEST, NLM_F_ACK, NLM_F_DUMP, NLM_F_REPLACE, NLM_F_EXCL, NLM_F_CREATE] = [
  0x1, 0x4, 0x300, 0x100, 0x200, 0x400,
];
const [RTM_NEWLINK, RTM_DELLINK, RTM_GETLINK, RTM_NEWADDR, RTM_GETADDR, RTM_NEWROUTE, RTM_GETROUTE, RTM_NEWNEIGH] = [
  16, 17, 18, 20, 22, 24, 26, 28,
];
const [IFLA_ADDRESS, IFLA_IFNAME, IFLA_MTU, IFLA_IFALIAS, IFLA_LINKINFO, IFLA_AF_SPEC, IFLA_NET_NS_FD, IFLA_EXT_MASK] =
  [1, 3, 4, 20, 18, 26, 28, 29];
const [IFA_ADDRESS, IFA_LOCAL, IFA_F_NODAD] = [1, 2, 0x2];
const [RTA_DST, RTA_OIF, RTA_GATEWAY] = [1, 4, 5];
const [NDA_DST, NDA_LLADDR] = [1, 2];
const [EPERM, ENOENT, EEXIST, ENODEV, EINVAL] = [1, 2, 17, 19, 22];
const STRERROR: Record<number, string> = {
  [EPERM]: 'Operation not permitted',
  [ENOENT]: 'No such file or directory',
  [EEXIST]: 'File exists',
  [ENODEV]: 'No such device',
  [EINVAL]: 'Invalid argument',
};
const HOST_MAC = 'ee:ee:ee:ee:ee:ee';
const POD_MAC = '02:42:0a:f4:00:05';

// A file stands in for a netns path: Rtnetlink opens it, and the fake's socket() is what enters it.
const dir = mkdtempSync(join(tmpdir(), 'ferry-rtnl-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const POD_NETNS = join(dir, 'pod');
writeFileSync(POD_NETNS, '');

/** One request as the kernel reads it. */
interface Sent {
  fd: number;
  type: number;
  flags: number;
  seq: number;
  header: Buffer;
  attrs: Map<number, Buffer>;
}

/** The family header's length of each request type. */
const HEADER_BYTES: Record<number, number> = {
  [RTM_NEWLINK]: 16,
  [RTM_DELLINK]: 16,
  [RTM_GETLINK]: 16,
  [RTM_NEWADDR]: 8,
  [RTM_GETADDR]: 8,
  [RTM_NEWROUTE]: 12,
  [RTM_GETROUTE]: 12,
  [RTM_NEWNEIGH]: 12,
};

function attrsOf(b: Buffer): Map<number, Buffer> {
  const m = new Map<number, Buffer>();
  for (let off = 0; off + 4 <= b.length; off += (b.readUInt16LE(off) + 3) & ~3) {
    m.set(b.readUInt16LE(off + 2), b.subarray(off + 4, off + b.readUInt16LE(off)));
  }
  return m;
}

function decodeSent(fd: number, msg: Buffer): Sent {
  expect(msg.readUInt32LE(0), 'nlmsg_len').toBe(msg.length);
  const type = msg.readUInt16LE(4);
  const headerBytes = HEADER_BYTES[type];
  if (headerBytes === undefined) throw new Error(`unexpected request type ${type}`);
  return {
    fd,
    type,
    flags: msg.readUInt16LE(6),
    seq: msg.readUInt32LE(8),
    header: msg.subarray(16, 16 + headerBytes),
    attrs: attrsOf(msg.subarray(16 + headerBytes)),
  };
}

const text = (b: Buffer | undefined) => b?.subarray(0, b.indexOf(0)).toString();
const ack = (seq: number, errno = 0) => {
  const payload = Buffer.alloc(20);
  payload.writeInt32LE(-errno, 0);
  return encodeMessage(NLMSG_ERROR, 0, seq, payload, []);
};
const done = (seq: number) => encodeMessage(NLMSG_DONE, NLM_F_MULTI, seq, Buffer.alloc(4), []);
/** An RTM_NEWLINK answer: IFF_UP | IFF_LOWER_UP when `up`. */
const linkMsg = (seq: number, l: { index: number; name: string; mac?: string; mtu?: number; up?: boolean }) =>
  encodeMessage(RTM_NEWLINK, NLM_F_MULTI, seq, ifinfomsg(l.index, l.up ? 0x10001 : 0), [
    [IFLA_IFNAME, str(l.name)],
    ...(l.mac ? [[IFLA_ADDRESS, macBytes(l.mac)] as const] : []),
    ...(l.mtu ? [[IFLA_MTU, u32(l.mtu)] as const] : []),
  ]);
const addrMsg = (seq: number, index: number, cidr: string, scope: number) => {
  const [ip = '', len] = cidr.split('/');
  const a = ipBytes(ip);
  const header = ifaddrmsg(a.family, Number(len), 0, index);
  header.writeUInt8(scope, 3);
  return encodeMessage(RTM_NEWADDR, NLM_F_MULTI, seq, header, [[IFA_LOCAL, a.bytes]]);
};
const routeMsg = (seq: number, r: { dst: string; oif: number; via?: string; scope?: number }) => {
  const [ip = '', len] = r.dst.split('/');
  const d = ipBytes(ip);
  return encodeMessage(RTM_NEWROUTE, NLM_F_MULTI, seq, rtmsg(d.family, Number(len), r.scope ?? 0), [
    ...(Number(len) > 0 ? [[RTA_DST, d.bytes] as const] : []),
    ...(r.via ? [[RTA_GATEWAY, ipBytes(r.via).bytes] as const] : []),
    [RTA_OIF, u32(r.oif)],
  ]);
};

/**
 * A kernel that answers each request with the datagrams `answer` gives it, and the calls it saw. Its
 * sockets are numbered from 100; `socket` replaces how one is made (a namespace that cannot be entered).
 */
function fakeKernel(
  answer: (req: Sent) => Buffer[],
  opts: { strictCheck?: boolean; socket?: (netnsFd?: number) => number } = {},
) {
  const sent: Sent[] = [];
  const socketsIn: (number | undefined)[] = [];
  const closed: number[] = [];
  const queue: Buffer[] = [];
  const sys: RtnlSys = {
    socket: (netnsFd) => {
      socketsIn.push(netnsFd);
      return opts.socket ? opts.socket(netnsFd) : 99 + socketsIn.length;
    },
    send: (fd, msg) => {
      const req = decodeSent(fd, msg);
      sent.push(req);
      queue.push(...answer(req));
    },
    recv: () => {
      const datagram = queue.shift();
      if (!datagram) throw new Error('recv with no answer queued: the layer waited for one the kernel never sends');
      return datagram;
    },
    close: (fd) => {
      closed.push(fd);
    },
    strerror: (errno) => STRERROR[errno] ?? `errno ${errno}`,
    strictCheck: () => opts.strictCheck ?? true,
  };
  return { sys, sent, socketsIn, closed };
}

/** iproute2 as Rtnetlink hands it what it does not do: each call recorded, answered with a marker. */
function iproute2StandIn() {
  const calls: string[] = [];
  const record =
    (call: string) =>
    async (..._args: unknown[]): Promise<never[]> => {
      calls.push(call);
      return [];
    };
  const backend: IpBackend = {
    apply: record('apply'),
    applyEach: record('applyEach'),
    show: async (_ns, q: Show) => {
      calls.push(`show ${q.of}`);
      return [];
    },
    routeTo: record('routeTo'),
    deleteLink: async () => {
      calls.push('deleteLink');
    },
  };
  return { backend, calls };
}

/** What `fn` threw (it must throw a NetError). */
async function failure(fn: () => Promise<unknown>): Promise<NetError> {
  const err = await fn().then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof NetError)) throw new Error(`expected a NetError, got ${String(err)}`);
  return err;
}

test("the InfraNIC's host batch: one request per op with its attributes, the ifindex looked up once, the show decoded", async () => {
  const k = fakeKernel((req) =>
    req.type === RTM_GETLINK
      ? [linkMsg(req.seq, { index: 7, name: 'fry0', mac: HOST_MAC, mtu: 1400, up: true })]
      : [ack(req.seq)],
  );
  const rtnl = new Rtnetlink(k.sys, iproute2StandIn().backend);
  const batch = new IpBatch()
    .addVeth({
      name: 'fry0',
      mac: HOST_MAC,
      mtu: 1400,
      peer: { name: 'eth0', mac: POD_MAC, mtu: 1400, netns: POD_NETNS },
    })
    .setAddrGenMode('fry0', 'none')
    .addAddress('fry0', 'fe80::ecee:eeff:feee:eeee/64', { nodad: true })
    .setUp('fry0', { alias: 'ferry:gen=7 net=ferry if=eth0 ctr=c1 ns=/var/run/netns/p 1' })
    .addRoute({ dst: '10.244.0.5/32', dev: 'fry0', scope: 'link' })
    .replaceNeigh('169.254.1.1', HOST_MAC, 'fry0')
    .showLink('fry0');

  const shown = await rtnl.apply(SELF, batch, 'create veth fry0');

  expect(shown).toEqual([[{ ifindex: 7, ifname: 'fry0', address: HOST_MAC, mtu: 1400, flags: ['UP', 'LOWER_UP'] }]]);
  expect(k.socketsIn).toEqual([undefined]);
  expect(k.closed).toEqual([100]);
  expect(k.sent.map((r) => [r.type, r.seq])).toEqual([
    [RTM_NEWLINK, 1],
    [RTM_NEWLINK, 2],
    [RTM_GETLINK, 3],
    [RTM_NEWADDR, 4],
    [RTM_NEWLINK, 5],
    [RTM_NEWROUTE, 6],
    [RTM_NEWNEIGH, 7],
    [RTM_GETLINK, 8],
  ]);
  const [veth, addrGen, lookup, addr, up, route, neigh, show] = k.sent;

  // The pair: exclusive create, the peer (a whole ifinfomsg and its attributes) born in the pod's netns by fd.
  expect(veth?.flags).toBe(NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL);
  expect(text(veth?.attrs.get(IFLA_IFNAME))).toBe('fry0');
  expect(veth?.attrs.get(IFLA_ADDRESS)).toEqual(macBytes(HOST_MAC));
  expect(veth?.attrs.get(IFLA_MTU)?.readUInt32LE(0)).toBe(1400);
  const linkinfo = attrsOf(veth?.attrs.get(IFLA_LINKINFO) ?? Buffer.alloc(0));
  expect(text(linkinfo.get(1))).toBe('veth');
  const peerMsg = attrsOf(linkinfo.get(2) ?? Buffer.alloc(0)).get(1) ?? Buffer.alloc(0);
  expect(peerMsg.subarray(0, 16)).toEqual(ifinfomsg());
  const peer = attrsOf(peerMsg.subarray(16));
  expect(text(peer.get(IFLA_IFNAME))).toBe('eth0');
  expect(peer.get(IFLA_ADDRESS)).toEqual(macBytes(POD_MAC));
  expect(peer.get(IFLA_MTU)?.readUInt32LE(0)).toBe(1400);
  expect(peer.get(IFLA_NET_NS_FD)?.readUInt32LE(0)).toBeGreaterThan(2);

  // addrgenmode none: IFLA_AF_SPEC → AF_INET6 → IFLA_INET6_ADDR_GEN_MODE = 1.
  expect(addrGen?.flags).toBe(NLM_F_REQUEST | NLM_F_ACK);
  const inet6 = attrsOf(attrsOf(addrGen?.attrs.get(IFLA_AF_SPEC) ?? Buffer.alloc(0)).get(10) ?? Buffer.alloc(0));
  expect([...(inet6.get(8) ?? [])]).toEqual([1]);

  // The address needs fry0's ifindex: asked for by name once, without counters, and kept for the route.
  expect(lookup?.flags).toBe(NLM_F_REQUEST);
  expect(text(lookup?.attrs.get(IFLA_IFNAME))).toBe('fry0');
  expect(lookup?.attrs.get(IFLA_EXT_MASK)?.readUInt32LE(0)).toBe(1 << 3);
  expect(addr?.flags).toBe(NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL);
  expect(addr?.header).toEqual(ifaddrmsg(10, 64, IFA_F_NODAD, 7));
  expect(addr?.attrs.get(IFA_LOCAL)).toEqual(ipBytes('fe80::ecee:eeff:feee:eeee').bytes);
  expect(addr?.attrs.get(IFA_ADDRESS)).toEqual(ipBytes('fe80::ecee:eeff:feee:eeee').bytes);

  // Up: IFF_UP set in flags and in the change mask, the link by name, the alias in the same request
  // (its bytes as given: no NUL, spaces kept).
  expect(up?.header).toEqual(ifinfomsg(0, 1, 1));
  expect(text(up?.attrs.get(IFLA_IFNAME))).toBe('fry0');
  expect(up?.attrs.get(IFLA_IFALIAS)?.toString()).toBe('ferry:gen=7 net=ferry if=eth0 ctr=c1 ns=/var/run/netns/p 1');

  // A host route: main table, proto boot, scope link, unicast, through ifindex 7.
  expect(route?.flags).toBe(NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL);
  expect(route?.header).toEqual(rtmsg(2, 32, 253));
  expect([...(route?.header ?? [])]).toEqual([2, 32, 0, 0, 254, 3, 253, 1, 0, 0, 0, 0]);
  expect(route?.attrs.get(RTA_DST)).toEqual(ipBytes('10.244.0.5').bytes);
  expect(route?.attrs.get(RTA_OIF)?.readUInt32LE(0)).toBe(7);

  // A permanent neighbour, replacing any other.
  expect(neigh?.flags).toBe(NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE);
  expect(neigh?.header.readInt32LE(4)).toBe(7);
  expect(neigh?.header.readUInt16LE(8)).toBe(0x80);
  expect(neigh?.attrs.get(NDA_DST)).toEqual(ipBytes('169.254.1.1').bytes);
  expect(neigh?.attrs.get(NDA_LLADDR)).toEqual(macBytes(HOST_MAC));

  expect(text(show?.attrs.get(IFLA_IFNAME))).toBe('fry0');
});

test('an NLMSG_ERROR ends the batch: the errno is the kind, the failed line its index, the reason the strerror', async () => {
  for (const [errno, kind] of [
    [EEXIST, 'exists'],
    [ENODEV, 'no-device'],
    [ENOENT, 'not-found'],
    [EINVAL, 'failed'],
  ] as const) {
    // The second op fails; a stale answer to another sequence number comes first and is skipped.
    const k = fakeKernel((req) => (req.seq === 2 ? [ack(41, EEXIST), ack(req.seq, errno)] : [ack(req.seq)]));
    const batch = new IpBatch().setUp('fry0').setDown('eth0').setUp('eth0');
    const err = await failure(() => new Rtnetlink(k.sys, iproute2StandIn().backend).apply(SELF, batch, 'set links'));
    expect(err).toMatchObject({ kind, failedLine: 1, argv: undefined, code: 103 });
    expect(err.message).toBe(`set links in the node namespace (ip link set dev eth0 down): ${STRERROR[errno]}`);
    expect(k.sent).toHaveLength(2);
    expect(k.closed).toEqual([100]);
  }
});

test('a dump in several datagrams: every link with its addresses, every route named by its link', async () => {
  const k = fakeKernel((req) => {
    if (req.type === RTM_GETLINK) {
      expect(req.flags).toBe(NLM_F_REQUEST | NLM_F_DUMP);
      // Two links in the first datagram, one in the second, NLMSG_DONE in a third.
      return [
        Buffer.concat([
          linkMsg(req.seq, { index: 1, name: 'lo', mtu: 65536, up: true }),
          linkMsg(req.seq, { index: 2, name: 'eth0', mac: POD_MAC, mtu: 1400, up: true }),
        ]),
        linkMsg(req.seq, { index: 3, name: 'eth1', mac: HOST_MAC }),
        done(req.seq),
      ];
    }
    if (req.type === RTM_GETADDR) {
      return [
        Buffer.concat([addrMsg(req.seq, 1, '127.0.0.1/8', 254), addrMsg(req.seq, 2, '10.244.0.5/32', 0)]),
        Buffer.concat([addrMsg(req.seq, 2, 'fd00:10:244::5/128', 0), done(req.seq)]),
      ];
    }
    expect(req.type).toBe(RTM_GETROUTE);
    expect(req.attrs.size).toBe(0);
    return [
      Buffer.concat([
        routeMsg(req.seq, { dst: '0.0.0.0/0', via: '169.254.1.1', oif: 2 }),
        routeMsg(req.seq, { dst: '169.254.1.1/32', oif: 2, scope: 253 }),
      ]),
      Buffer.concat([routeMsg(req.seq, { dst: '10.96.0.0/12', oif: 3 }), done(req.seq)]),
    ];
  });
  const rtnl = new Rtnetlink(k.sys, iproute2StandIn().backend);

  const [addrs, routes] = await rtnl.apply(netnsAt(POD_NETNS), new IpBatch().showAllAddrs().showRoutes(), 'inspect');

  expect(k.socketsIn).toHaveLength(1);
  expect(k.socketsIn[0]).toBeGreaterThan(2);
  expect(addrs).toEqual([
    {
      ifindex: 1,
      ifname: 'lo',
      mtu: 65536,
      flags: ['UP', 'LOWER_UP'],
      addr_info: [{ family: 'inet', local: '127.0.0.1', prefixlen: 8, scope: 'host' }],
    },
    {
      ifindex: 2,
      ifname: 'eth0',
      address: POD_MAC,
      mtu: 1400,
      flags: ['UP', 'LOWER_UP'],
      addr_info: [
        { family: 'inet', local: '10.244.0.5', prefixlen: 32, scope: 'global' },
        { family: 'inet6', local: 'fd00:10:244::5', prefixlen: 128, scope: 'global' },
      ],
    },
    { ifindex: 3, ifname: 'eth1', address: HOST_MAC, flags: [], addr_info: [] },
  ]);
  const route = { table: 'main', type: 'unicast', protocol: 'boot' };
  expect(routes).toEqual([
    { dst: 'default', gateway: '169.254.1.1', scope: 'global', ...route, dev: 'eth0' },
    { dst: '169.254.1.1', scope: 'link', ...route, dev: 'eth0' },
    { dst: '10.96.0.0/12', scope: 'global', ...route, dev: 'eth1' },
  ]);
});

test("one link's routes: the kernel filters by RTA_OIF where it can, the layer where it cannot; no such link is no-device", async () => {
  for (const strictCheck of [true, false]) {
    const k = fakeKernel(
      (req) => {
        if (req.type === RTM_GETLINK) return [linkMsg(req.seq, { index: 2, name: 'fry0' })];
        expect(req.attrs.get(RTA_OIF)?.readUInt32LE(0)).toBe(strictCheck ? 2 : undefined);
        return [
          Buffer.concat([
            routeMsg(req.seq, { dst: '10.244.0.5/32', oif: 2 }),
            routeMsg(req.seq, { dst: '10.0.0.0/8', oif: 9 }),
          ]),
          done(req.seq),
        ];
      },
      { strictCheck },
    );
    const ip = new Ip(new Rtnetlink(k.sys, iproute2StandIn().backend));
    expect(await ip.listRoutes(SELF, 'fry0')).toEqual([
      {
        dst: '10.244.0.5/32',
        scope: 'global',
        table: 'main',
        type: 'unicast',
        protocol: 'boot',
        dev: 'fry0',
        family: 4,
      },
    ]);
  }
  const k = fakeKernel((req) => [ack(req.seq, ENODEV)]);
  const rtnl = new Rtnetlink(k.sys, iproute2StandIn().backend);
  const err = await failure(() => rtnl.show(SELF, { of: 'routes', dev: 'nope0' }, 'list routes'));
  expect(err).toMatchObject({ kind: 'no-device', message: 'list routes in the node namespace: No such device' });
  expect(await new Ip(rtnl).listRoutes(SELF, 'nope0')).toEqual([]);
  // A dump the kernel refuses.
  const refused = fakeKernel((req) => [ack(req.seq, EPERM)]);
  const dumpErr = await failure(() =>
    new Rtnetlink(refused.sys, iproute2StandIn().backend).apply(SELF, new IpBatch().showRoutes(), 'list routes'),
  );
  expect(dumpErr).toMatchObject({ kind: 'failed', failedLine: 0 });
  expect(dumpErr.message).toMatch(/\(ip route show table all\): Operation not permitted$/);
});

test('a link: looked up by name, deleted by name; not there is no-device, which Ip makes undefined and absent', async () => {
  const k = fakeKernel((req) =>
    text(req.attrs.get(IFLA_IFNAME)) === 'eth0'
      ? [req.type === RTM_GETLINK ? linkMsg(req.seq, { index: 2, name: 'eth0', mac: POD_MAC }) : ack(req.seq)]
      : [ack(req.seq, ENODEV)],
  );
  const ip = new Ip(new Rtnetlink(k.sys, iproute2StandIn().backend));
  const pod = netnsAt(POD_NETNS);
  expect(await ip.getLink(pod, 'eth0')).toEqual({ ifindex: 2, ifname: 'eth0', address: POD_MAC, flags: [] });
  expect(await ip.getLink(pod, 'nope0')).toBeUndefined();
  expect(await ip.deleteLink(pod, 'eth0')).toBe('deleted');
  expect(await ip.deleteLink(pod, 'nope0')).toBe('absent');
  const del = k.sent.filter((r) => r.type === RTM_DELLINK);
  expect(del.map((r) => [r.flags, text(r.attrs.get(IFLA_IFNAME))])).toEqual([
    [NLM_F_REQUEST | NLM_F_ACK, 'eth0'],
    [NLM_F_REQUEST | NLM_F_ACK, 'nope0'],
  ]);
  // Each call had its own socket in the pod's namespace, and closed it.
  expect(k.closed).toEqual([100, 101, 102, 103]);
});

test('no network namespace at the path: nothing there, or a file setns refuses; another errno is not that', async () => {
  const k = fakeKernel(() => {
    throw new Error('nothing may be sent');
  });
  const rtnl = new Rtnetlink(k.sys, iproute2StandIn().backend);
  const gone = join(dir, 'gone');
  const err = await failure(() => rtnl.deleteLink(netnsAt(gone), 'eth0'));
  expect(err).toMatchObject({ kind: 'no-netns', failedLine: undefined });
  expect(err.message).toBe(`delete link eth0 in ${gone}: open network namespace ${gone}: No such file or directory`);
  expect(k.socketsIn).toEqual([]);

  // The file is there but setns(2) refuses it (EINVAL): no network namespace either.
  const setnsRefuses = fakeKernel(() => [], {
    socket: () => {
      throw new SysError(EINVAL, 'enter the network namespace: Invalid argument');
    },
  });
  const notNetns = await failure(() =>
    new Rtnetlink(setnsRefuses.sys, iproute2StandIn().backend).show(
      netnsAt(POD_NETNS),
      { of: 'link', dev: 'eth0' },
      'look up link eth0',
    ),
  );
  expect(notNetns).toMatchObject({ kind: 'no-netns' });
  expect(notNetns.message).toBe(`look up link eth0 in ${POD_NETNS}: enter the network namespace: Invalid argument`);
  expect(setnsRefuses.closed).toEqual([]);

  // Not allowed to enter it: a failure, not a namespace that is gone.
  const denied = fakeKernel(() => [], {
    socket: () => {
      throw new SysError(EPERM, 'enter the network namespace: Operation not permitted');
    },
  });
  const deniedErr = await failure(() =>
    new Rtnetlink(denied.sys, iproute2StandIn().backend).deleteLink(netnsAt(POD_NETNS), 'eth0'),
  );
  expect(deniedErr.kind).toBe('failed');

  // The veth's peer netns is opened by the op itself: gone, it fails that line, of the same kind.
  const veth = fakeKernel((req) => [ack(req.seq)]);
  const batch = new IpBatch().setUp('lo').addVeth({ name: 'fry0', peer: { name: 'eth0', netns: gone } });
  const peerErr = await failure(() =>
    new Rtnetlink(veth.sys, iproute2StandIn().backend).apply(SELF, batch, 'create veth fry0'),
  );
  expect(peerErr).toMatchObject({ kind: 'no-netns', failedLine: 1 });
  expect(peerErr.message).toBe(
    `create veth fry0 in the node namespace (ip link add fry0 type veth peer name eth0 netns ${gone}): open network namespace ${gone}: No such file or directory`,
  );
  expect(veth.sent).toHaveLength(1);
});

test('what rtnetlink does not do goes to iproute2, and nothing is sent on a socket for it', async () => {
  const k = fakeKernel(() => {
    throw new Error('nothing may be sent');
  });
  const iproute2 = iproute2StandIn();
  const ip = new Ip(new Rtnetlink(k.sys, iproute2.backend));
  const pod = netnsAt(POD_NETNS);
  await ip.apply(pod, new IpBatch().setUp('eth0').rename('eth0', 'eth1'), 'rename');
  await ip.applyEach(SELF, new IpBatch().deleteRoute('10.0.0.0/8', 117));
  await ip.listLinks(pod);
  await ip.linkAddresses(pod, 'eth0');
  await ip.listNeighbours(SELF, 'vx0');
  await ip.listFdb(SELF, 'vx0');
  await ip.listRoutesOf(SELF, 117);
  await ip.routeTo(SELF, '192.0.2.1');
  expect(iproute2.calls).toEqual([
    'apply',
    'applyEach',
    'show links',
    'show addresses',
    'show neighbours',
    'show fdb',
    'show routes-of',
    'routeTo',
  ]);
  expect(k.socketsIn).toEqual([]);
});

test('an empty batch asks nothing of the kernel', async () => {
  const k = fakeKernel(() => []);
  expect(await new Ip(new Rtnetlink(k.sys, iproute2StandIn().backend)).apply(SELF, new IpBatch(), 'nothing')).toEqual(
    [],
  );
  expect(k.socketsIn).toEqual([]);
});
