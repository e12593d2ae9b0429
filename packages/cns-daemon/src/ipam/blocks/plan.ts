/**
 * The block manager's decisions, without I/O (the loop, manager.ts, does the API calls and the store's
 * writes). One pool of a range at a time, sized as CNS sizes its pool (docs/architecture.md "Cluster
 * IPAM"): demand is every address assigned or cooling in the node's blocks plus the pods scheduled onto
 * the node and not yet added (the pod watch shows them before their ADD); free is what the blocks hold
 * beyond it. Fewer free than minFree: claim enough blocks at once to get back above it. More free than
 * maxFree: give back one block that has been empty for releaseAfterSec (maxFree >= minFree + a block, so
 * a release never leaves the node short and a claim never leaves it over). While the range is exhausted
 * an empty block goes back at once if the node keeps minFree without it (another node may be short),
 * unless it was claimed less than FRESH_CLAIM_MS ago: the ADD that caused the claim may not have landed
 * yet (it is between its wake-up and its commit, or it heard code 11 and the runtime will try again).
 */

/** How long a block just claimed is kept, empty, while the range is exhausted (at most releaseAfterSec). */
export const FRESH_CLAIM_MS = 30_000;

/** A block the node holds, as the last count of the store saw it. */
export interface HeldBlock {
  cidr: string;
  /** The block's network address, for ordering. */
  base: bigint;
  /** Addresses it can hand out (its size less its first address and the exclusions). */
  allocatable: number;
  /** Addresses in it assigned or cooling. */
  used: number;
  /** Since when nothing in it has been used (null: something is). */
  emptySinceMs: number | null;
  /** When the node claimed (or re-learned) it. */
  claimedAtMs: number;
}

export interface PoolDemand {
  minFree: number;
  maxFree: number;
  maxBlocks: number;
  releaseAfterMs: number;
  /** Addresses a new block adds (a typical block's allocatable count). */
  perBlock: number;
  held: readonly HeldBlock[];
  /** Claims in flight: counted as held. */
  claiming: number;
  /** Blocks the node is giving back: counted against maxBlocks until the API server has answered. */
  releasing: number;
  /** Pods scheduled onto the node without their address yet (and ADDs waiting for room). */
  pending: number;
  /** Blocks holding addresses the node uses outside every block it holds (adopted, or a /24 re-based): claimed first. */
  orphanBlocks: readonly string[];
  /** No block of the range is free to claim. */
  isRangeExhausted: boolean;
  nowMs: number;
}

export interface BlockPlan {
  /** Free addresses after demand (negative: short). */
  free: number;
  claimFirst: string[];
  /** How many new blocks to claim (the candidates are chosen by candidates.ts). */
  claimNew: number;
  /** The block to give back, if any (one per pass: the next pass sees the result). */
  release?: string;
}

export function planBlocks(d: PoolDemand): BlockPlan {
  const used = d.held.reduce((n, b) => n + b.used, 0);
  const capacity = d.held.reduce((n, b) => n + b.allocatable, 0) + d.claiming * d.perBlock;
  const free = capacity - used - d.pending;
  const room = Math.max(0, d.maxBlocks - d.held.length - d.claiming - d.releasing);
  const claimFirst = d.orphanBlocks.slice(0, room);
  let claimNew = 0;
  if (free < d.minFree && !d.isRangeExhausted && d.perBlock > 0) {
    // At least one block, however small minFree is: an ADD waiting for room is counted in `pending`.
    claimNew = Math.max(1, Math.ceil((d.minFree - free) / d.perBlock));
    claimNew = Math.min(claimNew, room - claimFirst.length);
  }
  const plan: BlockPlan = { free, claimFirst, claimNew: Math.max(0, claimNew) };
  // Never while a claim is asked for or in flight: the counts are about to change.
  if (claimFirst.length > 0 || plan.claimNew > 0 || d.claiming > 0) return plan;
  const release = releasable(d, free);
  return release ? { ...plan, release } : plan;
}

function releasable(d: PoolDemand, free: number): string | undefined {
  const empty = d.held
    .filter((b) => b.used === 0 && b.emptySinceMs !== null)
    .filter((b) =>
      d.isRangeExhausted
        ? d.nowMs - b.claimedAtMs >= Math.min(FRESH_CLAIM_MS, d.releaseAfterMs)
        : d.nowMs - (b.emptySinceMs ?? d.nowMs) >= d.releaseAfterMs,
    )
    .filter((b) => (d.isRangeExhausted ? free - b.allocatable >= d.minFree : free > d.maxFree))
    // The highest first: the lowest block is the node's VXLAN end (cluster/plan.ts), kept while it can be.
    .sort((a, b) => (a.base > b.base ? -1 : a.base < b.base ? 1 : 0));
  return empty[0]?.cidr;
}
