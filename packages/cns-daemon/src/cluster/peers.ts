/**
 * The other nodes of the cluster as ferryd's routing sees them, and the sources that report them: the
 * static list in ferryd's config, or a watch on the Kubernetes API's Node objects.
 */

/** One other node: its name, the underlay addresses its pod routes point at, and the pod CIDRs it owns. */
export interface Peer {
  name: string;
  /** The node's InternalIP(s), at most one per address family is used for routing. */
  addresses: string[];
  podCIDRs: string[];
  /**
   * The blocks of cluster-IPAM ranges the node holds (valid IPBlocks naming it), routed as its pod CIDRs
   * are; the lowest of a family is its VXLAN end (plan.ts vtepOf). Absent without cluster IPAM.
   */
  blocks?: string[];
}

/** Called after a source's first complete view and after every change: the whole set, this node excluded. */
export type PeersListener = (peers: readonly Peer[]) => void;

export interface PeerSourceStatus {
  kind: 'static' | 'kubernetes';
  /** ISO time of the last complete view (a list, or a watch event applied); null before the first. */
  lastSync: string | null;
  /** How often the watch was started again (410 Gone, a dropped connection, the API server away). */
  watchRestarts: number;
  /** The last error talking to the source since the last complete view, if any. */
  lastError: string | null;
}

export interface PeerSource {
  start(listener: PeersListener): void;
  stop(): Promise<void>;
  status(): PeerSourceStatus;
}
