/**
 * Egress as the config says: with `cluster.masquerade`, Ferry's masquerade rules for this node's pod
 * CIDRs and the cluster CIDRs (applied again at every kernel read, so a flushed ruleset comes back);
 * without it, whatever Ferry left from an earlier config is removed.
 */
import type { Runner } from '@ferry/net';
import { applyMasquerade, detectFirewall, removeMasquerade } from './masquerade';

export type EgressStep = () => Promise<string>;

export function egressStep(
  masquerade: boolean,
  spec: { podCIDRs: readonly string[]; clusterCIDRs: readonly string[] },
  run: Runner,
): EgressStep {
  if (masquerade) return async () => `masquerade (${await applyMasquerade(spec, { run })})`;
  return async () => {
    await removeMasqueradeIfAny(run);
    return 'off';
  };
}

/** Removes Ferry's masquerade rules; a node without nft or iptables has none. */
export async function removeMasqueradeIfAny(run: Runner): Promise<'removed' | 'absent'> {
  const firewall = await detectFirewall(run).catch(() => undefined);
  return firewall ? removeMasquerade({ run, firewall }) : 'absent';
}
