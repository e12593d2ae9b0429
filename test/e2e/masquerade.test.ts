/**
 * Egress masquerade (packages/cns-daemon/src/cluster/masquerade.ts) with the real nft and iptables, in a
 * node namespace between a pod namespace and an "outside" namespace. The outside runs a whoami server that
 * answers with the source address it saw; it also holds a "remote pod" address inside the cluster CIDRs.
 *
 *   pod 10.244.1.10 ── node 10.244.1.1 | 203.0.113.1 ── outside 203.0.113.2, remote pod 10.244.2.10
 *       fd00:10:244:1::10    fd00:10:244:1::1 | 2001:db8:1::1    2001:db8:1::2, fd00:10:244:2::10
 */
import { execa } from 'execa';
import { describe, expect, test } from 'vitest';
import {
  applyMasquerade,
  type Firewall,
  type MasqueradeSpec,
  removeMasquerade,
} from '../../packages/cns-daemon/src/cluster/masquerade';
import type { Runner } from '../../packages/net/src/run';
import { inNetns, type TestNetns, useNetns, useVeth } from '../fixtures/netns';
import type { Scope } from '../fixtures/scope';
import { useWhoAmIServer, whoAmI } from '../fixtures/whoami';

const SPEC: MasqueradeSpec = {
  podCIDRs: ['10.244.1.0/24', 'fd00:10:244:1::/64'],
  clusterCIDRs: ['10.244.0.0/16', '10.96.0.0/12', 'fd00:10:244::/56'],
};
const POD = { 4: '10.244.1.10', 6: 'fd00:10:244:1::10' };
const NODE = { 4: '203.0.113.1', 6: '2001:db8:1::1' };
const OUTSIDE = { 4: '203.0.113.2', 6: '2001:db8:1::2' };
const REMOTE_POD = { 4: '10.244.2.10', 6: 'fd00:10:244:2::10' };

/**
 * Runs commands for the module under test, but only inside `node`: anything else (the machine's own
 * firewall) fails the test instead of running. `--version` probes touch nothing and may run anywhere.
 */
function nodeOnlyRunner(node: TestNetns): Runner {
  return async (argv, input) => {
    const isProbe = argv.length === 2 && argv[1] === '--version';
    if (!isProbe && (argv[0] !== 'nsenter' || argv[1] !== `--net=${node.path}`)) {
      throw new Error(`refused to run outside the test's node namespace: ${argv.join(' ')}`);
    }
    const [file = '', ...args] = argv;
    const r = await execa(file, args, { input: input ?? '', reject: false, stripFinalNewline: false });
    return { exitCode: r.exitCode ?? 1, stdout: r.stdout, stderr: r.stderr };
  };
}

interface Topology {
  node: TestNetns;
  pod: TestNetns;
  outside: TestNetns;
  port: number;
}

async function useTopology(t: Scope): Promise<Topology> {
  const node = await useNetns(t, 'node');
  const pod = await useNetns(t, 'pod');
  const outside = await useNetns(t, 'out');
  await useVeth(node, 'to-pod', pod, 'eth0');
  await useVeth(node, 'to-out', outside, 'eth0');
  const ip = (ns: TestNetns, ...args: string[]) => inNetns(ns, 'ip', ...args);
  await ip(pod, 'addr', 'add', `${POD[4]}/24`, 'dev', 'eth0');
  await ip(pod, 'addr', 'add', `${POD[6]}/64`, 'dev', 'eth0', 'nodad');
  await ip(pod, 'route', 'add', 'default', 'via', '10.244.1.1');
  await ip(pod, '-6', 'route', 'add', 'default', 'via', 'fd00:10:244:1::1');
  await ip(node, 'addr', 'add', '10.244.1.1/24', 'dev', 'to-pod');
  await ip(node, 'addr', 'add', 'fd00:10:244:1::1/64', 'dev', 'to-pod', 'nodad');
  await ip(node, 'addr', 'add', `${NODE[4]}/24`, 'dev', 'to-out');
  await ip(node, 'addr', 'add', `${NODE[6]}/64`, 'dev', 'to-out', 'nodad');
  await ip(node, 'route', 'add', '10.244.2.0/24', 'via', OUTSIDE[4]);
  await ip(node, '-6', 'route', 'add', 'fd00:10:244:2::/64', 'via', OUTSIDE[6]);
  await inNetns(node, 'sysctl', '-qw', 'net.ipv4.ip_forward=1', 'net.ipv6.conf.all.forwarding=1');
  await ip(outside, 'addr', 'add', `${OUTSIDE[4]}/24`, 'dev', 'eth0');
  await ip(outside, 'addr', 'add', `${OUTSIDE[6]}/64`, 'dev', 'eth0', 'nodad');
  await ip(outside, 'addr', 'add', `${REMOTE_POD[4]}/32`, 'dev', 'lo');
  await ip(outside, 'addr', 'add', `${REMOTE_POD[6]}/128`, 'dev', 'lo');
  // The way back to pod addresses that were not masqueraded (another node routes our pod CIDR to us).
  await ip(outside, 'route', 'add', '10.244.1.0/24', 'via', NODE[4]);
  await ip(outside, '-6', 'route', 'add', 'fd00:10:244:1::/64', 'via', NODE[6]);
  const port = await useWhoAmIServer(t, outside);
  return { node, pod, outside, port };
}

/** The source address the outside saw for a connection from the pod to each destination. */
async function sources(topo: Topology) {
  const from = (dst: string) => whoAmI(topo.pod, dst, topo.port);
  return {
    outside4: await from(OUTSIDE[4]),
    outside6: await from(OUTSIDE[6]),
    remotePod4: await from(REMOTE_POD[4]),
    remotePod6: await from(REMOTE_POD[6]),
  };
}

const UNMASQUERADED = { outside4: POD[4], outside6: POD[6], remotePod4: POD[4], remotePod6: POD[6] };

/** Everything both backends keep in the node namespace (iptables-nft's tables are nftables tables too). */
async function firewallState(node: TestNetns): Promise<string> {
  const parts = [
    await inNetns(node, 'nft', 'list', 'ruleset'),
    await inNetns(node, 'iptables-save'),
    await inNetns(node, 'ip6tables-save'),
  ];
  // Counters move with the test's traffic; what is compared is the rules.
  return parts
    .join('\n')
    .replace(/^# (Generated|Completed) .*$/gm, '')
    .replace(/counter packets \d+ bytes \d+/g, 'counter')
    .replace(/\[\d+:\d+\]/g, '[0:0]');
}

/** A table, a chain and a rule Ferry must never touch, in both backends. */
async function addForeignRules(node: TestNetns): Promise<void> {
  await inNetns(node, 'nft', 'add', 'table', 'inet', 'foreign');
  await inNetns(node, 'nft', 'add chain inet foreign guard { type filter hook forward priority 0; policy accept; }');
  await inNetns(node, 'nft', 'add', 'rule', 'inet', 'foreign', 'guard', 'counter');
  for (const [cmd, src] of [
    ['iptables', '192.0.2.0/24'],
    ['ip6tables', '2001:db8:99::/64'],
  ] as const) {
    await inNetns(node, cmd, '-w', '-t', 'nat', '-N', 'FOREIGN-POSTROUTING');
    await inNetns(node, cmd, '-w', '-t', 'nat', '-A', 'FOREIGN-POSTROUTING', '-j', 'RETURN');
    await inNetns(node, cmd, '-w', '-t', 'nat', '-A', 'POSTROUTING', '-s', src, '-j', 'FOREIGN-POSTROUTING');
  }
}

describe.for(['nft', 'iptables'] as const)('egress masquerade with %s', (firewall: Firewall) => {
  test('pod to outside leaves with the node address; pod to a cluster CIDR keeps the pod address (IPv4 and IPv6)', async (t) => {
    const topo = await useTopology(t);
    const target = { run: nodeOnlyRunner(topo.node), netns: { kind: 'path' as const, path: topo.node.path }, firewall };
    // Without the rules the outside sees the pod itself (so the checks below can tell the difference).
    expect(await sources(topo)).toEqual(UNMASQUERADED);
    expect(await applyMasquerade(SPEC, target)).toBe(firewall);
    expect(await sources(topo)).toEqual({
      outside4: NODE[4],
      outside6: NODE[6],
      remotePod4: POD[4],
      remotePod6: POD[6],
    });
  });

  test('idempotent, replaced whole when the CIDRs change, removed without touching anything else', async (t) => {
    const topo = await useTopology(t);
    const target = { run: nodeOnlyRunner(topo.node), netns: { kind: 'path' as const, path: topo.node.path }, firewall };
    await addForeignRules(topo.node);
    const before = await firewallState(topo.node);

    await applyMasquerade(SPEC, target);
    const applied = await firewallState(topo.node);
    expect(applied).not.toBe(before);
    await applyMasquerade(SPEC, target);
    expect(await firewallState(topo.node)).toBe(applied);

    // Another pod CIDR: this pod's address is no longer a source, so nothing of the old spec masquerades it.
    const moved = { ...SPEC, podCIDRs: ['10.244.7.0/24', 'fd00:10:244:7::/64'] };
    await applyMasquerade(moved, target);
    expect(await firewallState(topo.node)).not.toBe(applied);
    expect((await sources(topo)).outside4).toBe(POD[4]);
    expect((await sources(topo)).outside6).toBe(POD[6]);
    await applyMasquerade(SPEC, target);
    expect(await firewallState(topo.node)).toBe(applied);
    expect((await sources(topo)).outside4).toBe(NODE[4]);

    expect(await removeMasquerade(target)).toBe('removed');
    expect(await firewallState(topo.node)).toBe(before);
    expect(await sources(topo)).toEqual(UNMASQUERADED);
    expect(await removeMasquerade(target)).toBe('absent');
    expect(await firewallState(topo.node)).toBe(before);
  });
});

test('without a firewall named, nftables is used where nft runs (as on these machines)', async (t) => {
  const node = await useNetns(t, 'node');
  const target = { run: nodeOnlyRunner(node), netns: { kind: 'path' as const, path: node.path } };
  expect(await applyMasquerade(SPEC, target)).toBe('nft');
  expect(await inNetns(node, 'nft', 'list', 'tables')).toContain('table inet ferry');
  expect(await inNetns(node, 'iptables-save')).not.toContain('FERRY');
  expect(await removeMasquerade(target)).toBe('removed');
  expect(await inNetns(node, 'nft', 'list', 'tables')).not.toContain('ferry');
});
