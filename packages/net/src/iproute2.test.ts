/**
 * How a failed run is read (real samples of what the tools wrote), and Iproute2 and Ip over it with the
 * runs answered by such samples: the command lines, where the failed line is read from, and which kinds Ip
 * turns into values. test/e2e/rtnetlink.test.ts runs the real tools and holds their kinds to rtnetlink's.
 */
import { expect, test } from 'vitest';
import { FdbBatch, IpBatch } from './batch';
import { Ip } from './ip';
import { Iproute2, kindOfOutput, netErrorOfRun } from './iproute2';
import { NetError, type NetErrorKind } from './net-error';
import { netnsAt, SELF } from './netns';
import type { RunResult } from './run';

// What the tools wrote, verbatim (iproute2 6.1.0, util-linux 2.38.1 nsenter, nftables 1.0.6, iptables 1.8.9
// on Linux 6.18, each run as root in a scratch namespace), by the kind it must be read as.
const SAMPLES: Record<Exclude<NetErrorKind, 'bad-output'>, readonly string[]> = {
  exists: [
    // ip link add of a taken name; ip route add of a route that is there
    'RTNETLINK answers: File exists\n',
    // ip link set dev X netns P, the name taken in P (an extended ack instead of the strerror)
    'Error: An interface with the same name exists in the target netns.\n',
    // ip addr add of an address the link has, IPv4 and IPv6
    'Error: ipv4: Address already assigned.\n',
    'Error: ipv6: address already assigned.\n',
    // ip link add type vxlan with a VNI another device has
    'Error: A VXLAN device with the specified VNI already exists.\n',
  ],
  'no-device': [
    // ip link del, link set, neigh show, bridge fdb show
    'Cannot find device "nope0"\n',
    // ip link show dev, addr show dev
    'Device "nope0" does not exist.\n',
    'RTNETLINK answers: No such device\n',
  ],
  'not-found': [
    // ip route del of a route that is not there
    'RTNETLINK answers: No such process\n',
    // ip neigh del, bridge fdb del
    'RTNETLINK answers: No such file or directory\n',
    // nft delete table of a table that is not there
    'Error: Could not process rule: No such file or directory\ndelete table inet ferry\n                  ^^^^^\n',
  ],
  // ip route get
  unreachable: ['RTNETLINK answers: Network is unreachable\n'],
  'no-netns': [
    // ip -n NAME: gone, then a file that is no namespace
    'Cannot open network namespace "ferry-net-gone": No such file or directory\n',
    'setting the network namespace "ferry-net-notns" failed: Invalid argument\n',
    // nsenter --net=PATH: the same two
    'nsenter: cannot open /var/run/netns/ferry-net-gone: No such file or directory\n',
    "nsenter: reassociate to namespace 'ns/net' failed: Invalid argument\n",
    // ip link add … peer … netns PATH, PATH gone
    'Error: argument "/var/run/netns/ferry-net-gone" is wrong: Invalid "netns" value\n\n',
  ],
  // Not a namespace that is gone: the kernel's EINVAL to a request, a path that may not be opened.
  failed: [
    // ip link set dev X netns FILE: the kernel refuses the fd
    'RTNETLINK answers: Invalid argument\n',
    'nsenter: cannot open /tmp/ferry-net-notns: Permission denied\n',
    // ip route add via an address that is not on-link; ip addr del of an address that is not there
    'Error: Nexthop has invalid gateway.\n',
    'Error: ipv4: Address not found.\n',
    // iptables -L of a chain nft made
    "iptables v1.8.9 (nf_tables): chain `FERRY-POSTROUTING' in table `nat' is incompatible, use 'nft' tool.\n",
    // a run past RUN_TIMEOUT_MS; nothing said at all
    '\nkilled after 30000 ms without finishing',
    '',
  ],
};

test.for(Object.entries(SAMPLES).flatMap(([kind, outputs]) => outputs.map((stderr) => [kind, stderr] as const)))(
  '%s: %j',
  ([kind, stderr]) => {
    expect(kindOfOutput(stderr)).toBe(kind);
  },
);

test("a failed batch line is read with the line's own words, the 'Command failed' trailer aside", () => {
  expect(kindOfOutput('RTNETLINK answers: File exists\nCommand failed -:3\n')).toBe('exists');
  expect(kindOfOutput('Cannot find device "fry9"\nCommand failed -:1\n')).toBe('no-device');
});

test('a failed run: "action: reason" from the last two lines, its kind, the command and the failed line kept', () => {
  const argv = ['ip', '-n', 'pod', '-batch', '-'];
  const err = netErrorOfRun(
    'configure eth0 in /var/run/netns/pod (ip route add 10.96.0.0/12 via 192.0.2.77 dev eth0)',
    { exitCode: 2, stdout: '', stderr: 'RTNETLINK answers: File exists\nCommand failed -:4\n' },
    argv,
    3,
  );
  expect(err).toBeInstanceOf(NetError);
  expect(err).toMatchObject({ name: 'NetError', code: 103, kind: 'exists', failedLine: 3, argv });
  expect(err.message).toBe(
    'configure eth0 in /var/run/netns/pod (ip route add 10.96.0.0/12 via 192.0.2.77 dev eth0): RTNETLINK answers: File exists; Command failed -:4',
  );
  expect(netErrorOfRun('delete link x', { exitCode: 1, stdout: '', stderr: '' }, ['ip']).message).toBe(
    'delete link x: exit code 1',
  );
});

const ok = (stdout = ''): RunResult => ({ exitCode: 0, stdout, stderr: '' });
const fails = (exitCode: number, stderr: string): RunResult => ({ exitCode, stdout: '', stderr });

/** A Runner answering each run from `answer`, and the runs it saw. */
function runs(answer: (argv: readonly string[], input?: string) => RunResult) {
  const seen: { argv: readonly string[]; input?: string }[] = [];
  const ip = new Ip(
    new Iproute2(async (argv, input) => {
      seen.push(input === undefined ? { argv } : { argv, input });
      return answer(argv, input);
    }),
  );
  return { ip, seen };
}

async function failure(p: Promise<unknown>): Promise<NetError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof NetError)) throw new Error(`expected a NetError, got ${String(err)}`);
  return err;
}

const POD = netnsAt('/var/run/netns/pod');

test('a batch is one `ip -batch -` in the namespace; a failure names its line, read from "Command failed -:N"', async () => {
  const r = runs(() => fails(1, 'RTNETLINK answers: File exists\nCommand failed -:2\n'));
  const batch = new IpBatch().setUp('eth0').addRoute({ dst: '10.96.0.0/12', dev: 'eth0', via: '192.0.2.77' });
  const err = await failure(r.ip.apply(POD, batch, 'configure eth0'));
  expect(r.seen).toEqual([
    {
      argv: ['ip', '-n', 'pod', '-batch', '-'],
      input: 'link set dev eth0 up\nroute add 10.96.0.0/12 via 192.0.2.77 dev eth0\n',
    },
  ]);
  expect(err).toMatchObject({ kind: 'exists', failedLine: 1, argv: ['ip', '-n', 'pod', '-batch', '-'] });
  expect(err.message).toBe(
    'configure eth0 in /var/run/netns/pod (ip route add 10.96.0.0/12 via 192.0.2.77 dev eth0): RTNETLINK answers: File exists; Command failed -:2',
  );
});

test('a batch with a show runs under -j -d and returns its documents; a word no batch can carry runs line by line', async () => {
  const shown = runs(() => ok('[{"ifindex":2,"ifname":"eth0"}]\n'));
  expect(await shown.ip.apply(SELF, new IpBatch().setUp('eth0').showLink('eth0'), 'show')).toEqual([
    [{ ifindex: 2, ifname: 'eth0' }],
  ]);
  expect(shown.seen[0]?.argv).toEqual(['ip', '-j', '-d', '-batch', '-']);

  // iproute2's batch reader cuts a line at '#': the alias goes on a command line of its own.
  const r = runs((argv) => (argv.includes('alias') ? fails(2, 'Cannot find device "eth9"\n') : ok()));
  const err = await failure(r.ip.apply(POD, new IpBatch().setUp('eth9').setAlias('eth9', 'a#b'), 'mark eth9'));
  expect(r.seen.map((s) => s.argv)).toEqual([
    ['ip', '-n', 'pod', 'link', 'set', 'dev', 'eth9', 'up'],
    ['ip', '-n', 'pod', 'link', 'set', 'dev', 'eth9', 'alias', 'a#b'],
  ]);
  expect(err).toMatchObject({ kind: 'no-device', failedLine: 1 });
});

test('a forced batch: each failed line with its kind and reason; a run that failed before any line throws', async () => {
  // What `ip -force -batch -` wrote for a route delete of a route that is not there, then an IPv4 route via
  // an address not on-link, then a neighbour on a device that is not there.
  const r = runs(() =>
    fails(
      2,
      'RTNETLINK answers: No such process\nCommand failed -:1\nError: Nexthop has invalid gateway.\nCommand failed -:2\nCannot find device "nope0"\nCommand failed -:3\n',
    ),
  );
  const batch = new IpBatch()
    .deleteRoute('10.2.0.0/24', 117)
    .addOwnedRoute({ dst: '10.3.0.0/24', via: '10.99.0.1', proto: 117 })
    .replaceNeigh('10.1.0.9', '02:00:00:00:00:01', 'nope0');
  expect(await r.ip.applyEach(SELF, batch)).toEqual([
    { index: 0, kind: 'not-found', message: 'RTNETLINK answers: No such process' },
    { index: 1, kind: 'failed', message: 'Nexthop has invalid gateway.' },
    { index: 2, kind: 'no-device', message: 'Cannot find device "nope0"' },
  ]);
  expect(r.seen[0]?.argv).toEqual(['ip', '-force', '-batch', '-']);

  const gone = runs(() => fails(255, 'Cannot open network namespace "pod": No such file or directory\n'));
  const fdb = new FdbBatch().delete('02:00:00:00:00:01', 'vx0', '192.0.2.1');
  const err = await failure(gone.ip.applyEach(POD, fdb));
  expect(gone.seen[0]?.argv).toEqual(['bridge', '-n', 'pod', '-force', '-batch', '-']);
  expect(err).toMatchObject({ kind: 'no-netns', failedLine: undefined });
  expect(await gone.ip.applyEach(POD, new FdbBatch())).toEqual([]);
  expect(gone.seen).toHaveLength(1);
});

test('not there is a value: no device, no route, no namespace at the path', async () => {
  const r = runs((argv) => {
    if (argv.includes('get')) return fails(2, 'RTNETLINK answers: Network is unreachable\n');
    if (argv.includes('del')) return fails(1, 'Cannot find device "fry0"\n');
    if (argv.includes('neigh')) return fails(1, 'Cannot find device "vx0"\n');
    return fails(1, 'Device "fry0" does not exist.\n');
  });
  expect(await r.ip.getLink(SELF, 'fry0')).toBeUndefined();
  expect(await r.ip.linkAddresses(SELF, 'fry0')).toBeUndefined();
  expect(await r.ip.deleteLink(SELF, 'fry0')).toBe('absent');
  expect(await r.ip.listNeighbours(SELF, 'vx0')).toEqual([]);
  expect(await r.ip.routeTo(SELF, '192.0.2.1')).toBeUndefined();
  expect(r.seen.map((s) => s.argv)).toEqual([
    ['ip', '-j', '-d', 'link', 'show', 'dev', 'fry0'],
    ['ip', '-j', '-d', 'addr', 'show', 'dev', 'fry0'],
    ['ip', 'link', 'del', 'dev', 'fry0'],
    ['ip', '-j', '-d', 'neigh', 'show', 'dev', 'vx0'],
    ['ip', '-j', 'route', 'get', '192.0.2.1'],
  ]);

  // A pod's netns gone (ip -n NAME), or a path that is not one (nsenter): its links are undefined.
  for (const [ns, stderr] of [
    [POD, 'Cannot open network namespace "pod": No such file or directory\n'],
    [netnsAt('/proc/4242/ns/net'), 'nsenter: cannot open /proc/4242/ns/net: No such file or directory\n'],
    [netnsAt('/run/containers/x'), "nsenter: reassociate to namespace 'ns/net' failed: Invalid argument\n"],
  ] as const) {
    expect(await runs(() => fails(1, stderr)).ip.linksIfPresent(ns)).toBeUndefined();
  }
});

test('other failures stay errors: an EINVAL from the kernel is no missing namespace, a refused delete no absent link', async () => {
  const einval = runs(() => fails(2, 'RTNETLINK answers: Invalid argument\n'));
  expect(await failure(einval.ip.linksIfPresent(POD))).toMatchObject({
    kind: 'failed',
    message: 'list links in /var/run/netns/pod: RTNETLINK answers: Invalid argument',
  });
  const busy = runs(() => fails(2, 'RTNETLINK answers: Operation not permitted\n'));
  expect(await failure(busy.ip.deleteLink(SELF, 'eth0'))).toMatchObject({
    kind: 'failed',
    argv: ['ip', 'link', 'del', 'dev', 'eth0'],
    message: 'delete link eth0 in the node namespace: RTNETLINK answers: Operation not permitted',
  });
  // A show whose output is not the shape Ferry reads: its own kind, naming the field.
  const odd = runs(() => ok('[{"dst":"10.0.0.0/8","lladdr":7}]\n'));
  expect(await failure(odd.ip.listNeighbours(SELF, 'vx0'))).toMatchObject({
    kind: 'bad-output',
    argv: undefined,
    message: expect.stringMatching(/^parse ip output for neighbours of vx0: /),
  });
});
