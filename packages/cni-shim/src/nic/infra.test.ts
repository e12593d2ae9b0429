/**
 * The InfraNIC's netlink steps without root: a recording FakeIp (testing/fake-ip.ts) stands in for the
 * node and the pod netns, and the real Rollback collects the undo steps. Sysctls are recorded, never
 * written: these tests must not touch the machine's own /proc/sys (the guard below checks it).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { IpBatch, SELF } from '@ferry/net';
import type { InfraNicPlan } from '@ferry/shared-types/api/allocations';
import type { InterfaceRecord } from '@ferry/shared-types/api/endpoints';
import { CniError, Code } from '@ferry/shared-types/errors';
import { HOST_VETH_MAC } from '@ferry/shared-types/host-veth';
import { afterEach, beforeAll, beforeEach, expect, test, vi } from 'vitest';
import type { Deps } from '../deps';
import { openLog } from '../log';
import { Rollback } from '../rollback';
import { FakeIp } from '../testing/fake-ip';
import {
  buildInfraNic,
  checkInfraHostSide,
  createPairEarly,
  type InfraBuildInput,
  type PairSpec,
  readHostVeth,
  teardownInfraNic,
} from './infra';

const sysctls = vi.hoisted(() => [] as string[]);
vi.mock('@ferry/net', async (importOriginal) => ({
  ...(await importOriginal<typeof import('@ferry/net')>()),
  ensureSysctl: (key: readonly string[], value: string) => {
    sysctls.push(`${key.join('.')}=${value}`);
  },
}));

// If ensureSysctl ever stops reaching infra.ts through the mock above, a run as root would switch on the
// machine's forwarding: put it back and fail loudly.
const MACHINE_SYSCTLS = ['/proc/sys/net/ipv4/ip_forward', '/proc/sys/net/ipv6/conf/all/forwarding'];
const machineValues = new Map<string, string>();
const readMachine = (path: string) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
};
beforeAll(() => {
  for (const path of MACHINE_SYSCTLS) machineValues.set(path, readMachine(path));
});
beforeEach(() => {
  sysctls.length = 0;
});
afterEach(() => {
  for (const [path, before] of machineValues) {
    if (readMachine(path) === before) continue;
    writeFileSync(path, before);
    throw new Error(`infra.test.ts changed the machine's ${path}: the ensureSysctl mock no longer reaches infra.ts`);
  }
});

const POD = '/var/run/netns/ferry-t-unit-pod';
const VETH = 'fry0123456789ab';
const V4 = { family: 4 as const, address: '10.244.1.5/32', gateway: '169.254.1.1' };
const V6 = { family: 6 as const, address: 'fd00:10:244:1::5/128', gateway: 'fe80::ecee:eeff:feee:eeee' };
// The host veth's marker goes in the request that sets it up: the ADD makes no request for it.
const MARKER = `ferry:gen=1 net=ferry if=eth0 ctr=c1 ns=${POD}`;
const ROUTE4 = { dst: '0.0.0.0/0', gw: '169.254.1.1' };
const ROUTE6 = { dst: '::/0', gw: 'fe80::ecee:eeff:feee:eeee' };

const planOf = (extra: Partial<InfraNicPlan> = {}): InfraNicPlan => ({
  nicType: 'InfraNIC',
  ifName: 'eth0',
  endpointId: 'c1',
  hostVethName: VETH,
  hostVethMac: HOST_VETH_MAC,
  hostVethAlias: MARKER,
  addresses: [V4, V6],
  routes: [ROUTE4, ROUTE6],
  ...extra,
});

const inputOf = (plan = planOf(), extra: Partial<InfraBuildInput> = {}): InfraBuildInput => ({
  plan,
  netns: POD,
  ...extra,
});

/** The pair ADD makes while ferryd allocates, from what it knows before the plan. */
const pairOf = (extra: Partial<PairSpec> = {}): PairSpec => ({
  hostVethName: VETH,
  hostVethMac: HOST_VETH_MAC,
  ifName: 'eth0',
  netns: POD,
  ...extra,
});

const recordOf = (plan: InfraNicPlan, extra: Partial<InterfaceRecord> = {}): InterfaceRecord => ({
  containerId: 'c1',
  ifName: plan.ifName,
  endpointId: plan.endpointId,
  nicType: 'InfraNIC',
  network: 'ferry',
  attachmentIfName: plan.ifName,
  netns: POD,
  pod: {},
  state: 'committed',
  generation: 1,
  addresses: plan.addresses,
  routes: plan.routes,
  hostVethName: plan.hostVethName,
  createdAt: '2026-11-30T12:00:00.000Z',
  updatedAt: '2026-11-30T12:00:00.000Z',
  ...extra,
});

const log = openLog('/dev/null', 'silent');

function world(): { ip: FakeIp; d: Deps; undo: Rollback } {
  const ip = new FakeIp();
  // infra.ts needs only the links and the log; the daemon client and the runtime stay out of reach.
  const d = { ip, log, addWaitMs: 0, delWaitMs: 0 } as Partial<Deps> as Deps;
  return { ip, d, undo: new Rollback() };
}

/** The thrown CniError's code and message. */
async function failure(p: Promise<unknown>): Promise<{ code: number; msg: string }> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (err instanceof CniError) return { code: err.code, msg: err.message };
  throw new Error(`expected a CniError, got ${String(err)}`);
}

const HOST_V6_GATEWAY = [`link set dev ${VETH} addrgenmode none`, `addr add ${V6.gateway}/64 dev ${VETH} nodad`];
const PAIR_LINE = `link add ${VETH} address ${HOST_VETH_MAC} type veth peer name eth0 netns ${POD}`;

// --- buildInfraNic ----------------------------------------------------------------------------------

test('dual stack: the pair is born with its pod side in the pod, then the host side, then the pod side', async () => {
  const { ip, d, undo } = world();
  const built = await buildInfraNic(inputOf(), undo, d);
  expect(ip.calls).toEqual([
    `apply node: ${[
      PAIR_LINE,
      ...HOST_V6_GATEWAY,
      `link set dev ${VETH} up alias ${MARKER}`,
      `route add ${V4.address} dev ${VETH} scope link`,
      `route add ${V6.address} dev ${VETH} scope link`,
    ].join('; ')}`,
    `apply ${POD}: ${[
      'link set dev eth0 up',
      `addr add ${V4.address} dev eth0`,
      `addr add ${V6.address} dev eth0 nodad`,
      // IPv4 needs a link route to its gateway; the IPv6 gateway is link-local, on-link already.
      'route add 169.254.1.1/32 dev eth0 scope link',
      `neigh replace 169.254.1.1 lladdr ${HOST_VETH_MAC} dev eth0 nud permanent`,
      `neigh replace ${V6.gateway} lladdr ${HOST_VETH_MAC} dev eth0 nud permanent`,
      'route add 0.0.0.0/0 via 169.254.1.1 dev eth0',
      `route add ::/0 via ${V6.gateway} dev eth0`,
      'link show dev eth0',
    ].join('; ')}`,
  ]);
  expect(sysctls).toEqual([
    `net.ipv4.conf.${VETH}.proxy_arp=1`,
    'net.ipv4.ip_forward=1',
    'net.ipv6.conf.all.forwarding=1',
  ]);
  const pod = ip.link(POD, 'eth0');
  expect(built).toEqual({ ifName: 'eth0', mac: pod?.address, containerIfIndex: pod?.ifindex, mtu: 1500 });
  expect(ip.link('node', VETH)).toMatchObject({ address: HOST_VETH_MAC, flags: expect.arrayContaining(['UP']) });
  // One undo, armed before the host batch: unwinding removes the pair, both sides.
  await undo.unwind(log);
  expect(ip.linkNames('node')).toEqual([]);
  expect(ip.linkNames(POD)).toEqual([]);
});

test('IPv4 only: no IPv6 gateway on the host veth, no IPv6 forwarding', async () => {
  const { ip, d, undo } = world();
  await buildInfraNic(inputOf(planOf({ addresses: [V4], routes: [ROUTE4] })), undo, d);
  expect(ip.calls).toEqual([
    `apply node: ${PAIR_LINE}; link set dev ${VETH} up alias ${MARKER}; route add ${V4.address} dev ${VETH} scope link`,
    `apply ${POD}: ${[
      'link set dev eth0 up',
      `addr add ${V4.address} dev eth0`,
      'route add 169.254.1.1/32 dev eth0 scope link',
      `neigh replace 169.254.1.1 lladdr ${HOST_VETH_MAC} dev eth0 nud permanent`,
      'route add 0.0.0.0/0 via 169.254.1.1 dev eth0',
      'link show dev eth0',
    ].join('; ')}`,
  ]);
  expect(sysctls).toEqual([`net.ipv4.conf.${VETH}.proxy_arp=1`, 'net.ipv4.ip_forward=1']);
});

test('IPv6 only: the host veth carries the gateway, no proxy ARP, no IPv4 route or forwarding', async () => {
  const { ip, d, undo } = world();
  await buildInfraNic(inputOf(planOf({ addresses: [V6], routes: [ROUTE6] })), undo, d);
  expect(ip.calls).toEqual([
    `apply node: ${[PAIR_LINE, ...HOST_V6_GATEWAY, `link set dev ${VETH} up alias ${MARKER}`, `route add ${V6.address} dev ${VETH} scope link`].join('; ')}`,
    `apply ${POD}: ${[
      'link set dev eth0 up',
      `addr add ${V6.address} dev eth0 nodad`,
      `neigh replace ${V6.gateway} lladdr ${HOST_VETH_MAC} dev eth0 nud permanent`,
      `route add ::/0 via ${V6.gateway} dev eth0`,
      'link show dev eth0',
    ].join('; ')}`,
  ]);
  expect(sysctls).toEqual(['net.ipv6.conf.all.forwarding=1']);
});

test("the runtime's MAC goes to the pod side; the conflist's MTU to both sides and wins over ferryd's", async () => {
  const { ip, d, undo } = world();
  const built = await buildInfraNic(inputOf(planOf({ mtu: 1400 }), { mac: '02:aa:bb:cc:dd:ee', mtu: 9000 }), undo, d);
  expect(ip.calls[0]).toMatch(
    new RegExp(
      `^apply node: link add ${VETH} address ${HOST_VETH_MAC} mtu 9000 type veth peer name eth0 address 02:aa:bb:cc:dd:ee mtu 9000 netns ${POD};`,
    ),
  );
  expect(built).toMatchObject({ mac: '02:aa:bb:cc:dd:ee', mtu: 9000 });
  // Without one in the conflist, ferryd's network MTU applies.
  const other = world();
  expect(await buildInfraNic(inputOf(planOf({ mtu: 1400 })), other.undo, other.d)).toMatchObject({ mtu: 1400 });
  expect(other.ip.calls[0]).toContain(
    `link add ${VETH} address ${HOST_VETH_MAC} mtu 1400 type veth peer name eth0 mtu 1400 netns`,
  );
});

test("CNI_IFNAME already in the pod is 102, and the pod's own interface is left alone", async () => {
  const { ip, d, undo } = world();
  // Someone else's eth0 (another plugin's, say), alone in the pod.
  await ip.apply(SELF, new IpBatch().addVeth({ name: 'other0', peer: { name: 'eth0', netns: POD } }), 'seed');
  ip.calls.length = 0;
  const refused = await failure(buildInfraNic(inputOf(), undo, d));
  expect(refused).toEqual({
    code: Code.InterfaceExists,
    msg: `create eth0 in ${POD}: an interface with that name already exists`,
  });
  // The clash is judged by looking, not guessed: the pod's eth0 is there, so nothing is deleted.
  expect(ip.calls).toEqual([expect.stringMatching(/^apply node: link add /), `getLink ${POD} eth0`]);
  await undo.unwind(log);
  expect(ip.linkNames(POD)).toEqual(['eth0']);
  expect(ip.linkNames('node')).toEqual(['other0']);
});

test('a host veth left by an interrupted ADD of this attachment is replaced', async () => {
  const { ip, d, undo } = world();
  // The leftover's pod side went with its pod: only the host side remains, under our name.
  await ip.apply(SELF, new IpBatch().addVeth({ name: VETH, peer: { name: 'gone0' } }), 'seed');
  ip.calls.length = 0;
  const built = await buildInfraNic(inputOf(), undo, d);
  // The clash is on the host side (no eth0 in the pod): the leftover goes and the pair is made again.
  expect(ip.calls.map((c) => c.split(':')[0])).toEqual([
    'apply node',
    `getLink ${POD} eth0`,
    `deleteLink node ${VETH}`,
    'apply node',
    `apply ${POD}`,
  ]);
  expect(ip.linkNames('node')).toEqual([VETH]);
  expect(built.containerIfIndex).toBe(ip.link(POD, 'eth0')?.ifindex);
});

test('a route that exists already is 103, not a name clash: nothing is probed or deleted but by the undo', async () => {
  const { ip, d, undo } = world();
  ip.failLine(`route add ${V4.address}`, 'RTNETLINK answers: File exists');
  const refused = await failure(buildInfraNic(inputOf(), undo, d));
  expect(refused.code).toBe(Code.NetlinkFailure);
  expect(refused.msg).toContain('File exists');
  expect(ip.calls).toHaveLength(1);
  // The pair was made before the route failed: the undo armed before the batch removes it.
  expect(ip.linkNames('node')).toEqual([VETH]);
  await undo.unwind(log);
  expect(ip.linkNames('node')).toEqual([]);
  expect(ip.linkNames(POD)).toEqual([]);
});

test('a pod side the kernel refuses fails the build, and the undo removes the pair', async () => {
  const { ip, d, undo } = world();
  ip.failLine('route add 0.0.0.0/0', 'Error: Nexthop has invalid gateway.');
  const refused = await failure(buildInfraNic(inputOf(), undo, d));
  expect(refused.code).toBe(Code.NetlinkFailure);
  expect(refused.msg).toContain('Nexthop has invalid gateway');
  expect(ip.linkNames(POD)).toEqual(['eth0']);
  await undo.unwind(log);
  expect(ip.linkNames('node')).toEqual([]);
  expect(ip.linkNames(POD)).toEqual([]);
});

// --- the pair made while ferryd allocates -----------------------------------------------------------

test('createPairEarly makes only the pair, and buildInfraNic then configures it without making another', async () => {
  const { ip, d, undo } = world();
  expect(await createPairEarly(pairOf(), d)).toBe(true);
  expect(ip.calls).toEqual([`apply node: ${PAIR_LINE}`]);
  const early = ip.link(POD, 'eth0');
  const built = await buildInfraNic(inputOf(), undo, d, pairOf());
  expect(ip.calls[1]).toBe(
    `apply node: ${[...HOST_V6_GATEWAY, `link set dev ${VETH} up alias ${MARKER}`, `route add ${V4.address} dev ${VETH} scope link`, `route add ${V6.address} dev ${VETH} scope link`].join('; ')}`,
  );
  expect(ip.calls).toHaveLength(3);
  expect(built.containerIfIndex).toBe(early?.ifindex);
  await undo.unwind(log);
  expect(ip.linkNames('node')).toEqual([]);
});

test("an early pair the plan wants otherwise (ferryd's MTU, another name) is replaced", async () => {
  for (const [why, plan] of [
    ['MTU set in ferryd', planOf({ mtu: 1400 })],
    ['another host veth name', planOf({ hostVethName: 'fryfedcba987654' })],
  ] as const) {
    const { ip, d, undo } = world();
    expect(await createPairEarly(pairOf(), d)).toBe(true);
    const early = ip.link(POD, 'eth0');
    const built = await buildInfraNic(inputOf(plan), undo, d, pairOf());
    expect(ip.calls[1], why).toBe(`deleteLink node ${VETH}`);
    expect(ip.calls[2], why).toMatch(new RegExp(`^apply node: link add ${plan.hostVethName} `));
    expect(ip.linkNames('node'), why).toEqual([plan.hostVethName]);
    expect(built.containerIfIndex, why).not.toBe(early?.ifindex);
    if (plan.mtu) expect(built.mtu, why).toBe(plan.mtu);
  }
});

test('createPairEarly changes nothing and says false when a name is taken', async () => {
  const { ip, d } = world();
  expect(await createPairEarly(pairOf(), d)).toBe(true);
  const before = { node: ip.link('node', VETH), pod: ip.link(POD, 'eth0') };
  // A second ADD of the same attachment (its pod is live), or a leftover: left for the usual path.
  expect(await createPairEarly(pairOf(), d)).toBe(false);
  expect({ node: ip.link('node', VETH), pod: ip.link(POD, 'eth0') }).toEqual(before);
  expect(ip.calls.filter((c) => !c.startsWith('apply node: link add'))).toEqual([]);
});

// --- DEL and CHECK ----------------------------------------------------------------------------------

test('teardownInfraNic deletes the host veth (the pod side goes with it); absent is done', async () => {
  const { ip, d, undo } = world();
  const plan = planOf();
  await buildInfraNic(inputOf(plan), undo, d);
  ip.calls.length = 0;
  await teardownInfraNic(recordOf(plan), d);
  expect(ip.calls).toEqual([`deleteLink node ${VETH}`]);
  expect(ip.linkNames('node')).toEqual([]);
  expect(ip.linkNames(POD)).toEqual([]);
  expect(ip.routes('node')).toEqual([]);
  await teardownInfraNic(recordOf(plan), d);
  // No host veth recorded: nothing to do.
  await teardownInfraNic(recordOf(plan, { hostVethName: undefined }), d);
  expect(ip.calls).toEqual([`deleteLink node ${VETH}`, `deleteLink node ${VETH}`]);
});

test('readHostVeth: the link and its routes only, nothing more to read when it is absent', async () => {
  const { ip, d, undo } = world();
  expect(await readHostVeth(VETH, d)).toEqual({ name: VETH, link: undefined, routes: [] });
  expect(ip.calls).toEqual([`getLink node ${VETH}`]);
  await buildInfraNic(inputOf(), undo, d);
  const view = await readHostVeth(VETH, d);
  expect(view.link).toMatchObject({ ifname: VETH, address: HOST_VETH_MAC });
  expect(view.routes.map((r) => [r.dst, r.dev, r.family])).toEqual([
    [V4.address, VETH, 4],
    [V6.address, VETH, 6],
  ]);
});

test('checkInfraHostSide: nothing to report when whole; a missing veth, a veth down, a missing route', async () => {
  const { ip, d, undo } = world();
  const plan = planOf();
  const rec = recordOf(plan);
  expect(await checkInfraHostSide(recordOf(plan, { hostVethName: undefined }), d)).toEqual([
    'ferryd recorded no host veth',
  ]);
  expect(await checkInfraHostSide(rec, d)).toEqual([`host veth ${VETH} is missing`]);
  await buildInfraNic(inputOf(plan), undo, d);
  expect(await checkInfraHostSide(rec, d)).toEqual([]);
  ip.setDown('node', VETH);
  const extra = { ...rec, addresses: [...rec.addresses, { family: 4 as const, address: '10.244.1.6/32' }] };
  expect(await checkInfraHostSide(extra, d)).toEqual([
    `host veth ${VETH} is down`,
    `no host route to 10.244.1.6/32 via ${VETH}`,
  ]);
});

test('checkInfraHostSide uses a view read earlier when it is of the recorded veth, and reads again otherwise', async () => {
  const { ip, d, undo } = world();
  const plan = planOf();
  await buildInfraNic(inputOf(plan), undo, d);
  const seen = await readHostVeth(VETH, d);
  ip.calls.length = 0;
  ip.setDown('node', VETH);
  // The earlier view said UP: it is what CHECK judges, without reading again.
  expect(await checkInfraHostSide(recordOf(plan), d, seen)).toEqual([]);
  expect(ip.calls).toEqual([]);
  const otherName = { ...seen, name: 'fryfedcba987654' };
  expect(await checkInfraHostSide(recordOf(plan), d, otherName)).toEqual([`host veth ${VETH} is down`]);
  expect(ip.calls).toEqual([`getLink node ${VETH}`, `listRoutes node ${VETH}`]);
});
