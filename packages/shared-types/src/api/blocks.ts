/** The operator API's view of cluster IPAM: this node's blocks of each range, and the cluster's use of it. */
import * as z from 'zod/mini';
import { FamilySchema } from './common';

export const HeldBlockSchema = z.strictObject({
  cidr: z.string(),
  /** held: addresses are handed out of it; releasing: given back, waiting for the API server's answer. */
  state: z.enum(['held', 'releasing']),
  /** Addresses it can hand out (its first address and exclusions left out). */
  allocatable: z.number(),
  /** Addresses in it assigned or cooling down, at the block manager's last count. */
  used: z.number(),
  /** Since when nothing in it has been used (ISO time); null while something is. */
  emptySince: z.nullable(z.string()),
});
export type HeldBlockReport = z.infer<typeof HeldBlockSchema>;

export const BlockRangeSchema = z.strictObject({
  network: z.string(),
  family: FamilySchema,
  /** The cluster-wide range. */
  range: z.string(),
  prefixLength: z.number(),
  blocks: z.array(HeldBlockSchema),
  /** Addresses free in the blocks held, less the pods scheduled here and not yet added (negative: short). */
  free: z.number(),
  /** Pods scheduled onto the node without their address yet, and ADDs waiting for room. */
  pending: z.number(),
  /** Claims in flight. */
  claiming: z.number(),
  /** No block of the range is free to claim. */
  isRangeExhausted: z.boolean(),
  /** The last failure talking to the API server since the last pass that worked. */
  lastError: z.nullable(z.string()),
  /** Addresses in use here inside another node's block; IPBlocks naming this node that are not valid. */
  conflicts: z.array(z.string()),
  /** The whole cluster's use of the range, as the IPBlock informer shows it. */
  cluster: z.strictObject({
    /** Blocks the range has room for (text: an IPv6 range has more than 2^53). */
    blocksTotal: z.string(),
    blocksHeld: z.number(),
    nodes: z.number(),
  }),
});
export type BlockRange = z.infer<typeof BlockRangeSchema>;

export const BlocksReportSchema = z.strictObject({
  /** False when no network's pool is a range split into blocks. */
  isEnabled: z.boolean(),
  ranges: z.array(BlockRangeSchema),
});
export type BlocksReport = z.infer<typeof BlocksReportSchema>;
