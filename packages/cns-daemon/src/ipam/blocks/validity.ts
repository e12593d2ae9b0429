/**
 * Which IPBlocks are what they say, judged by every ferryd from its informer's cache and its own config
 * (an object anyone with write access could have created by hand is hostile input): the name is the one
 * derived from network, family and CIDR (so a claim is a create-if-absent on one name per block), the
 * CIDR is canonical, inside the network's range and of the range's block prefix. Well-formed blocks cannot
 * overlap (one name per aligned CIDR); a malformed one overlapping a well-formed one is an Overlap. A
 * block that is not valid is never handed out of, nor routed to.
 */
import type { InvalidBlockReason } from '@ferry/shared-types/kube/ipam';
import { type Cidr, contains, lastOf, overlaps, parseCidr } from '../cidr';
import type { PoolSpec } from '../pool';
import type { ClusterBlock } from './ports';

/** Why a block is not valid: the IPBlock condition's reasons, or a range this node does not split into blocks. */
export type InvalidReason = InvalidBlockReason | 'UnknownRange';

export type Verdict = { isValid: true; cidr: Cidr } | { isValid: false; reason: InvalidReason; message: string };

export interface ValidityRules {
  /** The range of a (network, family) split into blocks here; undefined: not one of this node's ranges. */
  rangeOf(network: string, family: 4 | 6): PoolSpec | undefined;
  /** The one name of a block (kube/ipam.ts blockNameOf). */
  nameOf(network: string, family: 4 | 6, cidr: string): string;
}

/** A verdict for every block of the view, by object name. */
export function judgeBlocks(blocks: readonly ClusterBlock[], rules: ValidityRules): Map<string, Verdict> {
  const out = new Map<string, Verdict>();
  const wellFormed: { block: ClusterBlock; cidr: Cidr }[] = [];
  const rest: { block: ClusterBlock; verdict: Verdict }[] = [];
  for (const block of blocks) {
    const verdict = formOf(block, rules);
    if (verdict.isValid) wellFormed.push({ block, cidr: verdict.cidr });
    else rest.push({ block, verdict });
  }
  for (const w of wellFormed) out.set(w.block.name, { isValid: true, cidr: w.cidr });
  for (const r of rest) {
    let verdict = r.verdict;
    const cidr = verdict.isValid === false && verdict.reason !== 'UnknownRange' ? cidrOrNone(r.block.cidr) : undefined;
    if (cidr) {
      const hit = wellFormed.find((w) => overlaps(w.cidr, cidr));
      if (hit)
        verdict = {
          isValid: false,
          reason: 'Overlap',
          message: `${r.block.cidr} overlaps block ${hit.block.cidr} of node ${hit.block.node}`,
        };
    }
    out.set(r.block.name, verdict);
  }
  return out;
}

function cidrOrNone(text: string): Cidr | undefined {
  try {
    return parseCidr(text);
  } catch {
    return undefined;
  }
}

function formOf(block: ClusterBlock, rules: ValidityRules): Verdict {
  let cidr: Cidr;
  try {
    cidr = parseCidr(block.cidr);
  } catch (err) {
    return { isValid: false, reason: 'Misaligned', message: `${block.cidr}: ${(err as Error).message}` };
  }
  if (cidr.family !== block.family) {
    return { isValid: false, reason: 'Misaligned', message: `${block.cidr} is not an IPv${block.family} CIDR` };
  }
  const spec = rules.rangeOf(block.network, block.family);
  if (!spec?.blocks) {
    return {
      isValid: false,
      reason: 'UnknownRange',
      message: `network "${block.network}" IPv${block.family} is not a range split into blocks on this node`,
    };
  }
  if (block.name !== rules.nameOf(block.network, block.family, block.cidr)) {
    return {
      isValid: false,
      reason: 'NameMismatch',
      message: `the name of a block of ${block.cidr} is ${rules.nameOf(block.network, block.family, block.cidr)}`,
    };
  }
  if (!contains(spec.subnet, cidr.base) || !contains(spec.subnet, lastOf(cidr))) {
    return {
      isValid: false,
      reason: 'OutsideRange',
      message: `${block.cidr} is not inside the range ${spec.subnetText}`,
    };
  }
  if (cidr.prefix !== spec.blocks.prefix) {
    return {
      isValid: false,
      reason: 'OutsideRange',
      message: `${block.cidr} is not a /${spec.blocks.prefix} block of ${spec.subnetText}`,
    };
  }
  return { isValid: true, cidr };
}
