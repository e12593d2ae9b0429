/**
 * Egress masquerade: traffic from this node's pod CIDRs to anywhere outside the cluster CIDRs leaves with
 * the node's address (ip-masq-agent's model: one rule, a list of destinations never masqueraded).
 *
 * Ferry owns exactly one thing per backend and touches nothing else: with nftables the table `inet ferry`,
 * with iptables the nat chain FERRY-POSTROUTING (both families) and the one POSTROUTING rule jumping to it.
 * Applying replaces Ferry's ruleset in one transaction (`nft -f`, `iptables-restore --noflush`), so packets
 * never meet a half-written set of rules, and applying the same spec twice leaves the same ruleset.
 */

import { describeNetns, type Netns, netErrorOfRun, type Runner, SELF } from '@ferry/net';
import { CniError, Code } from '@ferry/shared-types/errors';
import { type Cidr, formatCidr, parseCidr } from '../ipam/cidr';

export type Firewall = 'nft' | 'iptables';

export interface MasqueradeSpec {
  /** This node's pod CIDRs: the sources that are masqueraded. */
  podCIDRs: readonly string[];
  /** Every pod and service CIDR of the cluster: destinations inside them keep the pod's address. */
  clusterCIDRs: readonly string[];
}

export interface MasqueradeTarget {
  run: Runner;
  /** Where the rules live: the node's namespace (default), or a test's. */
  netns?: Netns;
  /** Default: nftables when `nft` is installed, else iptables. */
  firewall?: Firewall;
}

/** nftables' name for Ferry's table (family inet: one table for IPv4 and IPv6). */
export const NFT_TABLE = 'ferry';
/** iptables' name for Ferry's chain in the nat table of each family. */
export const IPTABLES_CHAIN = 'FERRY-POSTROUTING';
const JUMP_COMMENT = 'ferry: pod egress masquerade';

/**
 * Never masqueraded besides the cluster CIDRs: link-local (the pod's gateway 169.254.1.1, metadata
 * services) and multicast, which NAT cannot return to a pod anyway.
 */
const ALWAYS_DIRECT = { 4: ['169.254.0.0/16', '224.0.0.0/4'], 6: ['fe80::/10', 'ff00::/8'] } as const;

/** nftables when the node has `nft`, else iptables (Debian 12's is iptables-nft). Throws when neither runs. */
export async function detectFirewall(run: Runner): Promise<Firewall> {
  if ((await run(['nft', '--version'])).exitCode === 0) return 'nft';
  if ((await run(['iptables', '--version'])).exitCode === 0) return 'iptables';
  throw new CniError(Code.Internal, 'set up egress masquerade: neither nft nor iptables runs on this node');
}

/**
 * Makes Ferry's masquerade rules say exactly `spec`, replacing what was there in one transaction. Returns
 * the backend used. Throws InvalidConfig for a malformed CIDR, NetError when the firewall refuses.
 */
export async function applyMasquerade(spec: MasqueradeSpec, target: MasqueradeTarget): Promise<Firewall> {
  const rules = classify(spec);
  const ns = target.netns ?? SELF;
  const firewall = target.firewall ?? (await detectFirewall(target.run));
  if (firewall === 'nft') {
    await mustRun(
      target.run,
      inNetns(ns, ['nft', '-f', '-']),
      renderNftRuleset(rules),
      `apply masquerade table in ${describeNetns(ns)}`,
    );
    return firewall;
  }
  for (const family of [4, 6] as const) {
    // A single-stack node may have no NAT table for the other family at all (no ip6table_nat): nothing of
    // that family to masquerade, nothing to ask of it. (A family dropped later keeps its idle chain until
    // removeMasquerade, which clears both.)
    if (rules.sources[family].length === 0) continue;
    const [restore, tables] = family === 4 ? ['iptables-restore', 'iptables'] : ['ip6tables-restore', 'ip6tables'];
    const what = `apply ${tables} masquerade chain in ${describeNetns(ns)}`;
    await mustRun(target.run, inNetns(ns, [restore, '-w', '--noflush']), renderIptablesRestore(rules, family), what);
    const jump = ['-t', 'nat', '-C', 'POSTROUTING', ...jumpRule()];
    if ((await target.run(inNetns(ns, [tables, '-w', ...jump]))).exitCode !== 0) {
      await mustRun(target.run, inNetns(ns, [tables, '-w', '-t', 'nat', '-A', 'POSTROUTING', ...jumpRule()]), '', what);
    }
  }
  return firewall;
}

/**
 * Removes Ferry's table (nft) or its chains and their jump rules (iptables) and nothing else. 'absent'
 * when there was nothing of Ferry's to remove.
 */
export async function removeMasquerade(target: MasqueradeTarget): Promise<'removed' | 'absent'> {
  const ns = target.netns ?? SELF;
  const firewall = target.firewall ?? (await detectFirewall(target.run));
  const run = (argv: string[]) => target.run(inNetns(ns, argv));
  if (firewall === 'nft') {
    const argv = ['nft', 'delete', 'table', 'inet', NFT_TABLE];
    const r = await run(argv);
    if (r.exitCode === 0) return 'removed';
    const err = netErrorOfRun(`remove masquerade table in ${describeNetns(ns)}`, r, argv);
    if (err.kind === 'not-found') return 'absent';
    throw err;
  }
  let removed = false;
  for (const tables of ['iptables', 'ip6tables']) {
    const what = `remove ${tables} masquerade chain in ${describeNetns(ns)}`;
    // A jump added twice (by hand, or by a crash between check and add) is removed as often as it is there.
    while ((await run([tables, '-w', '-t', 'nat', '-D', 'POSTROUTING', ...jumpRule()])).exitCode === 0) removed = true;
    if ((await run([tables, '-w', '-t', 'nat', '-n', '-L', IPTABLES_CHAIN])).exitCode !== 0) continue;
    await mustRun(target.run, inNetns(ns, [tables, '-w', '-t', 'nat', '-F', IPTABLES_CHAIN]), '', what);
    await mustRun(target.run, inNetns(ns, [tables, '-w', '-t', 'nat', '-X', IPTABLES_CHAIN]), '', what);
    removed = true;
  }
  return removed ? 'removed' : 'absent';
}

/** The spec's CIDRs by family, canonical, with the always-direct destinations added. */
export interface MasqueradeRules {
  sources: Record<4 | 6, string[]>;
  direct: Record<4 | 6, string[]>;
}

function classify(spec: MasqueradeSpec): MasqueradeRules {
  const rules: MasqueradeRules = { sources: { 4: [], 6: [] }, direct: { 4: [], 6: [] } };
  const parse = (text: string, what: string): Cidr => {
    try {
      return parseCidr(text);
    } catch (err) {
      throw new CniError(
        Code.InvalidConfig,
        `set up egress masquerade: ${what} ${JSON.stringify(text)}: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
  };
  const pods = spec.podCIDRs.map((text) => parse(text, 'pod CIDR'));
  for (const c of pods) rules.sources[c.family].push(formatCidr(c));
  // The node's own pod CIDRs are direct too, even when clusterCIDRs forgot them: pod to pod is never NAT.
  for (const c of [...spec.clusterCIDRs.map((text) => parse(text, 'cluster CIDR')), ...pods]) {
    rules.direct[c.family].push(formatCidr(c));
  }
  for (const family of [4, 6] as const) {
    rules.direct[family].push(...ALWAYS_DIRECT[family]);
    rules.sources[family] = [...new Set(rules.sources[family])];
    rules.direct[family] = [...new Set(rules.direct[family])];
  }
  return rules;
}

/**
 * One `nft -f` transaction: create the table if missing, delete it (with whatever an earlier run or an
 * operator left in it), and write it anew. Interval sets with auto-merge accept overlapping CIDRs.
 */
export function renderNftRuleset(rules: MasqueradeRules): string {
  const set = (name: string, type: string, elements: string[]) =>
    [
      `  set ${name} {`,
      `    type ${type}`,
      '    flags interval',
      '    auto-merge',
      ...(elements.length > 0 ? [`    elements = { ${elements.join(', ')} }`] : []),
      '  }',
    ].join('\n');
  const masq: string[] = [];
  if (rules.sources[4].length > 0) masq.push('    ip saddr @pod4 ip daddr != @direct4 masquerade');
  if (rules.sources[6].length > 0) masq.push('    ip6 saddr @pod6 ip6 daddr != @direct6 masquerade');
  return [
    `table inet ${NFT_TABLE}`,
    `delete table inet ${NFT_TABLE}`,
    `table inet ${NFT_TABLE} {`,
    set('pod4', 'ipv4_addr', rules.sources[4]),
    set('direct4', 'ipv4_addr', rules.direct[4]),
    set('pod6', 'ipv6_addr', rules.sources[6]),
    set('direct6', 'ipv6_addr', rules.direct[6]),
    '  chain postrouting {',
    '    type nat hook postrouting priority srcnat; policy accept;',
    ...masq,
    '  }',
    '}',
    '',
  ].join('\n');
}

/**
 * One `iptables-restore --noflush` transaction for a family: declaring the chain creates it or flushes
 * it, then direct destinations RETURN and the pod CIDRs MASQUERADE. Other chains are not touched.
 */
export function renderIptablesRestore(rules: MasqueradeRules, family: 4 | 6): string {
  return [
    '*nat',
    `:${IPTABLES_CHAIN} - [0:0]`,
    ...rules.direct[family].map((d) => `-A ${IPTABLES_CHAIN} -d ${d} -j RETURN`),
    ...rules.sources[family].map((s) => `-A ${IPTABLES_CHAIN} -s ${s} -j MASQUERADE`),
    'COMMIT',
    '',
  ].join('\n');
}

function jumpRule(): string[] {
  return ['-m', 'comment', '--comment', JUMP_COMMENT, '-j', IPTABLES_CHAIN];
}

// nsenter rather than `ip netns exec`: no /sys remount, and any netns path works (as @ferry/net does).
function inNetns(ns: Netns, argv: string[]): string[] {
  return ns.kind === 'self' ? argv : ['nsenter', `--net=${ns.path}`, ...argv];
}

async function mustRun(run: Runner, argv: string[], input: string, what: string): Promise<void> {
  const r = await run(argv, input);
  if (r.exitCode !== 0) throw netErrorOfRun(what, r, argv);
}
