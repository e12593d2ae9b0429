/**
 * @ferry/net's rtnetlink layer, run by Bun through bun:ffi exactly as the shipped shim runs it, in real
 * namespaces: what the kernel shows afterwards (the tests' own `ip -j`) must be what the batch asked for,
 * link by link, address by address, route by route, neighbour by neighbour; and failures must carry the
 * kind the kernel's errno says, name the op that failed and give the kernel's reason.
 */

import { writeFileSync } from 'node:fs';
import { execa } from 'execa';
import { expect, test } from 'vitest';
import { type BatchOp, IpBatch, Iproute2, NetError, type NetErrorKind, netnsAt } from '../../packages/net/src/index';
import { nodeRunner } from '../../packages/net/src/node-runner';
import { addresses, link, linkNames, routes } from '../fixtures/kernel';
import { inNetns, removeNetns, type TestNetns, useNetns } from '../fixtures/netns';
import { ROOT } from '../fixtures/paths';
import { useTmpDir } from '../fixtures/tmp';

const BUN = `${ROOT}/node_modules/.bin/bun`;
const HOST_MAC = 'ee:ee:ee:ee:ee:ee';
const POD_MAC = '02:42:0a:f4:00:05';
/** A host veth's marker as ferryd words it: set in the request that sets the link up. */
const HOST_ALIAS = 'ferry:gen=7 net=ferry if=eth0 ctr=c0ffee ns=/var/run/netns/a pod';

interface Outcome {
  shown?: unknown[][];
  deleted?: true;
  routes?: unknown[];
  /** Bytes the kernel sent for a routesOf. */
  received?: number;
  error?: string;
  kind?: string;
  failedLine?: number | null;
}

/** Runs the layer from inside `node` ("self" is the node's namespace). */
async function rtnl(node: TestNetns, input: Record<string, unknown>): Promise<Outcome> {
  const r = await execa('nsenter', [`--net=${node.path}`, BUN, 'run', `${ROOT}/test/fixtures/rtnl-apply.ts`], {
    input: JSON.stringify(input),
    reject: false,
  });
  if (r.exitCode !== 0) throw new Error(`rtnl-apply: ${r.stderr}`);
  return JSON.parse(r.stdout) as Outcome;
}

async function neighbours(ns: TestNetns, family: 4 | 6) {
  const out: { dst: string; dev: string; lladdr?: string; state?: string[] }[] = JSON.parse(
    await inNetns(ns, 'ip', '-j', `-${family}`, 'neigh', 'show'),
  );
  return out.map(({ dst, dev, lladdr, state }) => ({ dst, dev, lladdr, state }));
}

type AddrDoc = { ifindex: number; ifname: string; address?: string; addr_info: Record<string, unknown>[] }[];

/** An `ip -j addr show` document reduced to the fields the layer reports. */
function reduceAddrs(out: AddrDoc) {
  return out.map((l) => ({
    ifindex: l.ifindex,
    ifname: l.ifname,
    address: l.address,
    addr_info: l.addr_info.map(({ family, local, prefixlen, scope }) => ({ family, local, prefixlen, scope })),
  }));
}

/** `ip -j -d route show table all`, reduced to the fields the layer reports. */
async function ipRoutes(ns: TestNetns) {
  const out: Record<string, unknown>[] = JSON.parse(
    await inNetns(ns, 'ip', '-j', '-d', 'route', 'show', 'table', 'all'),
  );
  const keys = ['dst', 'gateway', 'dev', 'table', 'type', 'scope', 'protocol', 'pref'];
  return out.map((r) => Object.fromEntries(keys.filter((k) => r[k] !== undefined).map((k) => [k, r[k]])));
}

/** The InfraNIC's whole shape: what ferry-cni's ADD asks of the kernel, both families. */
async function buildPair(node: TestNetns, pod: TestNetns): Promise<[Outcome, Outcome]> {
  const host = await rtnl(node, {
    netns: 'self',
    ops: [
      {
        op: 'addVeth',
        spec: {
          name: 'fry0t',
          mac: HOST_MAC,
          mtu: 1400,
          peer: { name: 'eth0', mac: POD_MAC, mtu: 1400, netns: pod.path },
        },
      },
      { op: 'setAddrGenMode', dev: 'fry0t', mode: 'none' },
      { op: 'addAddress', dev: 'fry0t', cidr: 'fe80::ecee:eeff:feee:eeee/64', nodad: true },
      { op: 'setUp', dev: 'fry0t', alias: HOST_ALIAS },
      { op: 'addRoute', route: { dst: '10.244.0.5/32', dev: 'fry0t', scope: 'link' } },
      { op: 'addRoute', route: { dst: 'fd00:10:244::5/128', dev: 'fry0t', scope: 'link' } },
    ],
  });
  const podSide = await rtnl(node, {
    netns: pod.path,
    ops: [
      { op: 'setUp', dev: 'eth0' },
      { op: 'addAddress', dev: 'eth0', cidr: '10.244.0.5/32', nodad: false },
      { op: 'addAddress', dev: 'eth0', cidr: 'fd00:10:244::5/128', nodad: true },
      { op: 'addRoute', route: { dst: '169.254.1.1/32', dev: 'eth0', scope: 'link' } },
      { op: 'replaceNeigh', dst: '169.254.1.1', lladdr: HOST_MAC, dev: 'eth0' },
      { op: 'replaceNeigh', dst: 'fe80::ecee:eeff:feee:eeee', lladdr: HOST_MAC, dev: 'eth0' },
      { op: 'addRoute', route: { dst: '0.0.0.0/0', via: '169.254.1.1', dev: 'eth0' } },
      { op: 'addRoute', route: { dst: '::/0', via: 'fe80::ecee:eeff:feee:eeee', dev: 'eth0' } },
      { op: 'showLink', dev: 'eth0' },
    ],
  });
  return [host, podSide];
}

test('a veth born in the pod, addresses, routes and neighbours are what the batch asked for', async (t) => {
  const node = await useNetns(t, 'node');
  const pod = await useNetns(t, 'pod');
  const [host, podSide] = await buildPair(node, pod);
  expect(host).toEqual({ shown: [] });
  expect(podSide.error).toBeUndefined();

  // Links: the host side in the node, the peer born in the pod under its final name; MACs, MTUs, up.
  expect(await linkNames(node)).toEqual(['fry0t', 'lo']);
  expect(await link(node, 'fry0t')).toMatchObject({
    address: HOST_MAC,
    mtu: 1400,
    ifalias: HOST_ALIAS,
    linkinfo: { info_kind: 'veth' },
  });
  const eth0 = await link(pod, 'eth0');
  expect(eth0).toMatchObject({ address: POD_MAC, mtu: 1400, linkinfo: { info_kind: 'veth' } });
  const shown = podSide.shown?.[0]?.[0] as { flags?: string[] } | undefined;
  expect(shown).toMatchObject({ ifindex: eth0?.ifindex, ifname: 'eth0', address: POD_MAC, mtu: 1400 });
  expect(shown?.flags).toContain('UP');

  // Addresses: exactly the asked ones (no generated link-local on the host side: addrgenmode none).
  expect(await addresses(pod, 'eth0')).toEqual(['10.244.0.5/32', 'fd00:10:244::5/128']);
  const hostAddrs = JSON.parse(await inNetns(node, 'ip', '-j', 'addr', 'show', 'dev', 'fry0t'));
  expect(hostAddrs[0].addr_info.map((a: { local: string; prefixlen: number }) => `${a.local}/${a.prefixlen}`)).toEqual([
    'fe80::ecee:eeff:feee:eeee/64',
  ]);
  // nodad: the asked address is usable at once, never "tentative".
  const pod6 = JSON.parse(await inNetns(pod, 'ip', '-j', '-6', 'addr', 'show', 'dev', 'eth0'));
  expect(pod6[0].addr_info.find((a: { local: string }) => a.local === 'fd00:10:244::5')).toMatchObject({ nodad: true });
  expect(pod6[0].addr_info.find((a: { local: string }) => a.local === 'fd00:10:244::5').tentative).toBeUndefined();

  // Routes, as `ip route add` would have made them (proto boot, which ip does not print; scope link without a gateway).
  expect(await routes(node, 4)).toEqual([{ dst: '10.244.0.5', dev: 'fry0t', scope: 'link', flags: [] }]);
  expect((await routes(node, 6)).filter((r) => r.dev === 'fry0t' && r.dst === 'fd00:10:244::5')).toHaveLength(1);
  expect(await routes(pod, 4)).toEqual([
    { dst: 'default', gateway: '169.254.1.1', dev: 'eth0', flags: [] },
    { dst: '169.254.1.1', dev: 'eth0', scope: 'link', flags: [] },
  ]);
  expect((await routes(pod, 6)).find((r) => r.dst === 'default')).toMatchObject({
    gateway: 'fe80::ecee:eeff:feee:eeee',
    dev: 'eth0',
  });

  // Neighbours: permanent, pointing at the host veth's MAC.
  expect(await neighbours(pod, 4)).toEqual([
    { dst: '169.254.1.1', dev: 'eth0', lladdr: HOST_MAC, state: ['PERMANENT'] },
  ]);
  expect(await neighbours(pod, 6)).toEqual([
    { dst: 'fe80::ecee:eeff:feee:eeee', dev: 'eth0', lladdr: HOST_MAC, state: ['PERMANENT'] },
  ]);

  // Reads: the layer's address and route dumps say what iproute2 says, field for field, in both namespaces.
  for (const ns of [pod, node]) {
    const read = await rtnl(node, {
      netns: ns === pod ? pod.path : 'self',
      ops: [{ op: 'showAllAddrs' }, { op: 'showRoutes' }],
    });
    const [addrs, routeDump] = read.shown ?? [];
    expect(reduceAddrs(addrs as AddrDoc)).toEqual(
      reduceAddrs(JSON.parse(await inNetns(ns, 'ip', '-j', '-d', 'addr', 'show'))),
    );
    expect(routeDump).toEqual(await ipRoutes(ns));
  }

  // The routes of one link, without a dump of every link for the names: the same as ip's, filtered.
  const { received, ...viaHost } = await rtnl(node, { netns: 'self', routesOf: 'fry0t' });
  expect(viaHost.routes).toEqual((await ipRoutes(node)).filter((r) => r.dev === 'fry0t'));
  // The kernel filters them (a node with 110 pods has hundreds of routes): a hundred more routes on
  // other links add nothing to what it sends.
  const batch = ['link add fryd0 type veth peer name fryd1', 'link set fryd0 up', 'link set fryd1 up'];
  for (let i = 0; i < 100; i++) batch.push(`route add 10.250.${i}.0/24 dev fryd0`);
  await execa('ip', ['-n', node.name, '-batch', '-'], { input: batch.join('\n') });
  const crowded = await rtnl(node, { netns: 'self', routesOf: 'fry0t' });
  expect(crowded.routes).toEqual(viaHost.routes);
  expect(received).toBeGreaterThan(0);
  expect(crowded.received).toBe(received);
  expect(viaHost.routes).toEqual(
    expect.arrayContaining([
      expect.objectContaining({ dst: '10.244.0.5', dev: 'fry0t' }),
      expect.objectContaining({ dst: 'fd00:10:244::5', dev: 'fry0t' }),
    ]),
  );
  // No such link: its kind, which Ip turns into no routes.
  expect(await rtnl(node, { netns: 'self', routesOf: 'nope0' })).toMatchObject({ kind: 'no-device' });

  // Traffic flows: the pod reaches the host side's address through its gateway.
  await inNetns(node, 'ip', 'addr', 'add', '192.0.2.1/32', 'dev', 'lo');
  await inNetns(node, 'sysctl', '-qw', 'net.ipv4.conf.fry0t.proxy_arp=1');
  const ping = await execa('nsenter', [`--net=${pod.path}`, 'ping', '-c', '1', '-W', '2', '192.0.2.1'], {
    reject: false,
  });
  expect(ping.exitCode, ping.stdout).toBe(0);
});

test("failures carry their kind and the kernel's reason and name the op; a link deleted twice is not there the second time", async (t) => {
  const node = await useNetns(t, 'node');
  const pod = await useNetns(t, 'pod');
  await buildPair(node, pod);

  // The peer's name is taken in the pod: the first op fails, "File exists", nothing is created.
  const clash = await rtnl(node, {
    netns: 'self',
    ops: [{ op: 'addVeth', spec: { name: 'fry1t', peer: { name: 'eth0', netns: pod.path } } }],
  });
  expect(clash).toMatchObject({ kind: 'exists', failedLine: 0 });
  expect(clash.error).toMatch(/: File exists$/);
  expect(clash.error).toContain('ip link add fry1t type veth peer name eth0');
  expect(await linkNames(node)).toEqual(['fry0t', 'lo']);

  // A route that already exists fails on its own line; the lines before it took effect.
  const again = await rtnl(node, {
    netns: 'self',
    ops: [
      { op: 'addRoute', route: { dst: '10.244.0.6/32', dev: 'fry0t', scope: 'link' } },
      { op: 'addRoute', route: { dst: '10.244.0.5/32', dev: 'fry0t', scope: 'link' } },
    ],
  });
  expect(again).toMatchObject({ kind: 'exists', failedLine: 1 });
  expect(again.error).toBe(
    'apply test batch in the node namespace (ip route add 10.244.0.5/32 dev fry0t scope link): File exists',
  );
  expect((await routes(node, 4)).map((r) => r.dst)).toEqual(['10.244.0.5', '10.244.0.6']);

  // An op on a device that is not there.
  const missing = await rtnl(node, { netns: pod.path, ops: [{ op: 'setUp', dev: 'nope0' }] });
  expect(missing).toMatchObject({ kind: 'no-device', failedLine: 0 });
  expect(missing.error).toMatch(/: No such device$/);

  // Delete: the veth takes its peer along.
  expect(await rtnl(node, { netns: 'self', deleteLink: 'fry0t' })).toEqual({ deleted: true });
  expect(await linkNames(node)).toEqual(['lo']);
  expect(await linkNames(pod)).toEqual(['lo']);
  // The second time there is no such link: its kind, which Ip turns into 'absent'.
  expect(await rtnl(node, { netns: 'self', deleteLink: 'fry0t' })).toMatchObject({ kind: 'no-device' });

  // No network namespace at the path: gone (a pod's after its death), or a file that is not one (left
  // behind unmounted). Both say no-netns, with the reason of the step that failed.
  await removeNetns(pod.name);
  const gone = await rtnl(node, { netns: pod.path, deleteLink: 'eth0' });
  expect(gone).toMatchObject({ kind: 'no-netns', failedLine: null });
  expect(gone.error).toBe(
    `delete link eth0 in ${pod.path}: open network namespace ${pod.path}: No such file or directory`,
  );
  const notNetns = `${useTmpDir(t)}/netns`;
  writeFileSync(notNetns, '');
  const unmounted = await rtnl(node, { netns: notNetns, deleteLink: 'eth0' });
  expect(unmounted).toMatchObject({ kind: 'no-netns' });
  expect(unmounted.error).toMatch(/: enter the network namespace: Invalid argument$/);
  // A veth whose peer's namespace is gone fails on its line, of the same kind; nothing is created.
  const peerGone = await rtnl(node, {
    netns: 'self',
    ops: [{ op: 'addVeth', spec: { name: 'fry2t', peer: { name: 'eth0', netns: pod.path } } }],
  });
  expect(peerGone).toMatchObject({ kind: 'no-netns', failedLine: 0 });
  // The process went back to the node's namespace after every pod-side socket: the node is untouched.
  expect(await linkNames(node)).toEqual(['lo']);
});

test('iproute2 and rtnetlink give the same failure the same kind, on the same line', async (t) => {
  const node = await useNetns(t, 'node');
  const pod = await useNetns(t, 'pod');
  const gone = await useNetns(t, 'gone');
  await removeNetns(gone.name);
  const notNetns = `${useTmpDir(t)}/netns`;
  writeFileSync(notNetns, '');
  await buildPair(node, pod);
  const veth = (peerNetns: string): BatchOp => ({
    op: 'addVeth',
    spec: { name: 'fry1t', peer: { name: 'eth0', netns: peerNetns } },
  });
  const cases: { what: string; netns: string; ops: BatchOp[]; kind: NetErrorKind; failedLine?: number }[] = [
    { what: 'a veth whose peer name the pod has', netns: 'self', ops: [veth(pod.path)], kind: 'exists', failedLine: 0 },
    {
      what: 'a route that is there, on the second line',
      netns: 'self',
      ops: [
        { op: 'setUp', dev: 'fry0t' },
        { op: 'addRoute', route: { dst: '10.244.0.5/32', dev: 'fry0t', scope: 'link' } },
      ],
      kind: 'exists',
      failedLine: 1,
    },
    {
      what: 'a device that is not there',
      netns: pod.path,
      ops: [{ op: 'setUp', dev: 'nope0' }],
      kind: 'no-device',
      failedLine: 0,
    },
    // iproute2 exits on an unopenable `netns PATH` without naming the line, so only the kind is compared.
    { what: "a veth whose peer's namespace is gone", netns: 'self', ops: [veth(gone.path)], kind: 'no-netns' },
    { what: 'a namespace that is gone', netns: gone.path, ops: [{ op: 'setUp', dev: 'eth0' }], kind: 'no-netns' },
    { what: 'a path that is no namespace', netns: notNetns, ops: [{ op: 'setUp', dev: 'eth0' }], kind: 'no-netns' },
  ];
  const iproute2 = new Iproute2(nodeRunner);
  // rtnl-apply's "self" is the node's namespace; this process is in the machine's, so iproute2 is sent there.
  const nsOf = (netns: string) => netnsAt(netns === 'self' ? node.path : netns);
  for (const c of cases) {
    const viaRtnl = await rtnl(node, { netns: c.netns, ops: c.ops });
    const batch = new IpBatch();
    batch.ops.push(...c.ops);
    const viaIproute2: unknown = await iproute2
      .apply(nsOf(c.netns), batch, 'apply test batch')
      .catch((e: unknown) => e);
    if (!(viaIproute2 instanceof NetError)) throw new Error(`${c.what}: iproute2 did not fail with a NetError`);
    expect(viaRtnl.kind, `${c.what}, rtnetlink`).toBe(c.kind);
    expect(viaIproute2.kind, `${c.what}, iproute2`).toBe(c.kind);
    if (c.failedLine !== undefined) {
      expect(viaRtnl.failedLine, `${c.what}, rtnetlink`).toBe(c.failedLine);
      expect(viaIproute2.failedLine, `${c.what}, iproute2`).toBe(c.failedLine);
    }
  }
  // A link that is not there, deleted.
  expect(await rtnl(node, { netns: pod.path, deleteLink: 'nope0' })).toMatchObject({ kind: 'no-device' });
  await expect(iproute2.deleteLink(netnsAt(pod.path), 'nope0')).rejects.toMatchObject({ kind: 'no-device' });
  // None of it changed a link.
  expect(await linkNames(node)).toEqual(['fry0t', 'lo']);
  expect(await linkNames(pod)).toEqual(['eth0', 'lo']);
});
