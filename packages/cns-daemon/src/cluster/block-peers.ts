/**
 * Routing follows blocks: each peer, as the Node source reports it, gains the blocks it holds of the
 * cluster-IPAM ranges (the valid IPBlocks naming it, from the informer), so a block claimed on another
 * node reaches this one's routes with the watch event, and a block released or reclaimed takes its route
 * with it. Only blocks of networks whose pods are routed (InfraNIC networks) count: a secondary network's
 * addresses sit on its devices' own segment.
 */
import type { ClusterBlock } from '../ipam/blocks/ports';
import type { Peer, PeerSource, PeerSourceStatus, PeersListener } from './peers';

export interface PeerBlocks {
  /** The blocks of every node that are valid and routed (by holder). */
  routed(): readonly ClusterBlock[];
  onChange(listener: () => void): void;
}

export class BlockPeerSource implements PeerSource {
  readonly #inner: PeerSource;
  readonly #blocks: PeerBlocks;
  #nodes: readonly Peer[] | undefined;
  #listener: PeersListener | undefined;
  #flush: NodeJS.Immediate | undefined;
  #last = '';

  constructor(inner: PeerSource, blocks: PeerBlocks) {
    this.#inner = inner;
    this.#blocks = blocks;
  }

  start(listener: PeersListener): void {
    this.#listener = listener;
    this.#blocks.onChange(() => this.#scheduleFlush());
    this.#inner.start((peers) => {
      this.#nodes = peers;
      this.#last = '';
      this.#scheduleFlush();
    });
  }

  async stop(): Promise<void> {
    if (this.#flush) clearImmediate(this.#flush);
    await this.#inner.stop();
  }

  status(): PeerSourceStatus {
    return this.#inner.status();
  }

  // Block events come one object at a time: report once per tick, and only a view that changed.
  #scheduleFlush(): void {
    if (this.#flush) return;
    this.#flush = setImmediate(() => {
      this.#flush = undefined;
      if (!this.#nodes) return;
      const byNode = new Map<string, string[]>();
      for (const b of this.#blocks.routed()) byNode.set(b.node, [...(byNode.get(b.node) ?? []), b.cidr]);
      const peers = this.#nodes.map((p) => {
        const blocks = byNode.get(p.name);
        return blocks ? { ...p, blocks: blocks.sort() } : p;
      });
      const signature = JSON.stringify(peers);
      if (signature === this.#last) return;
      this.#last = signature;
      this.#listener?.(peers);
    });
  }
}
