/**
 * Cluster IPAM's metrics: blocks held and releasing, free addresses, conflicts and the range's use (read
 * from the block manager at scrape time), and the claims and releases it made (counted as they happen).
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { BlockEvents, BlockManager } from './manager';

export interface BlockMetrics {
  events: BlockEvents;
  register(registry: Registry, manager: BlockManager): void;
}

export function blockMetrics(): BlockMetrics {
  const claims = new Counter({
    name: 'ferry_ipam_block_claims_total',
    help: 'Block claims by outcome: claimed, conflict (another node created it first, or holds the block of an address in use here), exhausted (no block of the range was free), error (the API server did not answer)',
    labelNames: ['network', 'family', 'outcome'],
    registers: [],
  });
  const releases = new Counter({
    name: 'ferry_ipam_block_releases_total',
    help: 'Empty blocks given back to the range',
    labelNames: ['network', 'family'],
    registers: [],
  });
  return {
    events: {
      claim: (network, family, outcome) => claims.inc({ network, family: String(family), outcome }),
      release: (network, family) => releases.inc({ network, family: String(family) }),
    },
    register(registry, manager) {
      registry.registerMetric(claims);
      registry.registerMetric(releases);
      const registers = [registry];
      const ranges = () => manager.status();
      new Gauge({
        name: 'ferry_ipam_blocks',
        help: 'Blocks of each range this node holds (held) or is giving back (releasing)',
        labelNames: ['network', 'family', 'state'],
        registers,
        collect() {
          this.reset();
          for (const r of ranges()) {
            for (const state of ['held', 'releasing'] as const) {
              const n = r.blocks.filter((b) => b.state === state).length;
              this.set({ network: r.network, family: String(r.family), state }, n);
            }
          }
        },
      });
      new Gauge({
        name: 'ferry_ipam_block_free_addresses',
        help: "Addresses free in this node's blocks, less the pods scheduled here and not yet added (negative: short)",
        labelNames: ['network', 'family'],
        registers,
        collect() {
          this.reset();
          for (const r of ranges()) this.set({ network: r.network, family: String(r.family) }, r.free);
        },
      });
      new Gauge({
        name: 'ferry_ipam_block_conflicts',
        help: 'Addresses in use here inside another node’s block, and IPBlocks naming this node that are not valid',
        labelNames: ['network', 'family'],
        registers,
        collect() {
          this.reset();
          for (const r of ranges()) this.set({ network: r.network, family: String(r.family) }, r.conflicts.length);
        },
      });
      new Gauge({
        name: 'ferry_ipam_range_blocks',
        help: "The range's blocks, as this node's IPBlock informer shows them: total (room for) and held (by any node)",
        labelNames: ['network', 'family', 'state'],
        registers,
        collect() {
          this.reset();
          for (const r of ranges()) {
            const labels = { network: r.network, family: String(r.family) };
            this.set({ ...labels, state: 'total' }, Number(r.cluster.blocksTotal));
            this.set({ ...labels, state: 'held' }, r.cluster.blocksHeld);
          }
        },
      });
      new Gauge({
        name: 'ferry_ipam_range_exhausted',
        help: 'Whether no block of the range is free to claim (1) or one is (0)',
        labelNames: ['network', 'family'],
        registers,
        collect() {
          this.reset();
          for (const r of ranges())
            this.set({ network: r.network, family: String(r.family) }, r.isRangeExhausted ? 1 : 0);
        },
      });
    },
  };
}
