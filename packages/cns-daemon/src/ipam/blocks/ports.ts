/**
 * What the block manager and routing need of the Kubernetes API, in their own terms: the IPBlocks the
 * informer holds (the whole cluster's), and the calls that claim and give back a block. kube/ipam-api.ts
 * (the typed client and its informers) is adapted to these in ipam/blocks/build.ts; unit tests use fakes.
 */
import type { Family } from '../cidr';

/** One IPBlock as ferryd reads it: the fields of kube/ipam.ts's IPBlock that decide anything. */
export interface ClusterBlock {
  name: string;
  uid: string;
  network: string;
  family: Family;
  cidr: string;
  /** The holder: a Node's name. */
  node: string;
  /** metadata.deletionTimestamp is set (the garbage collector or a release; the finalizer keeps it). */
  isDeleting: boolean;
}

export interface BlockClaim {
  network: string;
  family: Family;
  cidr: string;
  node: string;
}

/** A call the API server did not answer, or answered with an error that may heal: try again later. */
export type ClaimOutcome = { created: ClusterBlock } | { exists: ClusterBlock | undefined };

/** What the holder writes to its block's status: how many addresses are assigned, and whether it is Valid. */
export interface BlockStatusWrite {
  assigned: number;
  valid: { isValid: boolean; reason: string; message: string };
}

export interface BlockApi {
  /** Create-if-absent: 201 → created; 409 AlreadyExists → exists (the object, when a GET found it). */
  createBlock(claim: BlockClaim): Promise<ClaimOutcome>;
  /** Deletes the block (uid precondition) and removes the finalizer; 'conflict': it is not the one we hold. */
  releaseBlock(block: ClusterBlock): Promise<'released' | 'gone' | 'conflict'>;
  /**
   * This node's Node's spec.podCIDRs (read once): while a cluster moves from podCIDRs to blocks, the node's
   * new blocks are claimed inside them first, where the nodes not moved yet route.
   */
  ownPodCIDRs(): Promise<readonly string[]>;
  /** Writes the block's status at the resourceVersion last seen; a stale one is skipped (the next pass writes). */
  writeStatus(block: ClusterBlock, status: BlockStatusWrite): Promise<void>;
}

/** The informer's view of every IPBlock. */
export interface BlockView {
  /** True once a list has been applied (before it, nothing is known of anyone's blocks). */
  hasSynced(): boolean;
  blocks(): readonly ClusterBlock[];
  /** Called after every change that is applied (a list, a watch event). */
  onChange(listener: () => void): void;
}
