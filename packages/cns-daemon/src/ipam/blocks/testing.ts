/**
 * A fake of the API server's IPBlocks for the block manager's unit tests: create-if-absent on one name
 * (the first create wins, the next gets AlreadyExists), delete by uid, an informer view every node shares,
 * and an `isAway` switch for the API server being unreachable. The real stand-in (test/fixtures/
 * kube-api-server.mjs) is what the e2e tests use.
 */
import type { BlockApi, BlockClaim, BlockStatusWrite, BlockView, ClaimOutcome, ClusterBlock } from './ports';

export const fakeNameOf = (network: string, family: 4 | 6, cidr: string) =>
  `${network}.v${family}.${cidr.replace(/[.:/]/g, '-')}`;

export class FakeBlockCluster {
  readonly objects = new Map<string, ClusterBlock>();
  readonly #listeners = new Set<() => void>();
  isAway = false;
  /** The Node's spec.podCIDRs every node of this fake has. */
  podCIDRs: string[] = [];
  isSynced = true;
  /** Objects no view shows yet (a watch that has not delivered them). */
  readonly unseen = new Set<string>();
  creates = 0;
  /** The last status each block's holder wrote. */
  readonly statuses = new Map<string, BlockStatusWrite>();
  #uid = 0;

  /** The view one node's informer has (all nodes share one here: events are delivered at once). */
  view(): BlockView {
    return {
      hasSynced: () => this.isSynced,
      blocks: () => [...this.objects.values()].filter((b) => !this.unseen.has(b.name)),
      onChange: (listener) => {
        this.#listeners.add(listener);
      },
    };
  }

  api(): BlockApi {
    return {
      createBlock: async (claim: BlockClaim): Promise<ClaimOutcome> => {
        await Promise.resolve();
        if (this.isAway) throw new Error('connect ECONNREFUSED');
        this.creates += 1;
        const name = fakeNameOf(claim.network, claim.family, claim.cidr);
        const existing = this.objects.get(name);
        if (existing) return { exists: existing };
        const created = { ...claim, name, uid: `uid-${++this.#uid}`, isDeleting: false };
        this.objects.set(name, created);
        this.#changed();
        return { created };
      },
      ownPodCIDRs: async () => this.podCIDRs,
      writeStatus: async (block, status) => {
        await Promise.resolve();
        if (this.isAway) throw new Error('connect ECONNREFUSED');
        if (this.objects.get(block.name)?.uid === block.uid) this.statuses.set(block.name, status);
      },
      releaseBlock: async (block: ClusterBlock) => {
        await Promise.resolve();
        if (this.isAway) throw new Error('connect ECONNREFUSED');
        const existing = this.objects.get(block.name);
        if (!existing) return 'gone';
        if (existing.uid !== block.uid) return 'conflict';
        this.objects.delete(block.name);
        this.#changed();
        return 'released';
      },
    };
  }

  /** Writes an object as someone else (a hand edit, another node's claim) would. */
  put(block: Omit<ClusterBlock, 'name' | 'uid' | 'isDeleting'> & { name?: string }): ClusterBlock {
    const b = {
      isDeleting: false,
      uid: `uid-${++this.#uid}`,
      ...block,
      name: block.name ?? fakeNameOf(block.network, block.family, block.cidr),
    };
    this.objects.set(b.name, b);
    this.#changed();
    return b;
  }

  remove(name: string): void {
    this.objects.delete(name);
    this.#changed();
  }

  #changed(): void {
    for (const l of this.#listeners) l();
  }
}
