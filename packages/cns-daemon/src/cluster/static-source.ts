/** The peers of `cluster.peers`: a PeerSource whose one view never changes while ferryd runs. */
import type { PeerConfig } from '@ferry/shared-types/config/ferryd';
import type { Peer, PeerSource, PeerSourceStatus, PeersListener } from './peers';

export class StaticPeerSource implements PeerSource {
  readonly #peers: readonly Peer[];
  #lastSync: string | null = null;

  /** `self` is skipped, so every node may be given the same list. */
  constructor(peers: readonly PeerConfig[], self: string | undefined) {
    this.#peers = peers.filter((p) => p.name !== self).map((p) => ({ ...p }));
  }

  start(listener: PeersListener): void {
    this.#lastSync = new Date().toISOString();
    listener(this.#peers);
  }

  async stop(): Promise<void> {}

  status(): PeerSourceStatus {
    return { kind: 'static', lastSync: this.#lastSync, watchRestarts: 0, lastError: null };
  }
}
