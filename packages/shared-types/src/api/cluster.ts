/** The operator API's view of cluster networking: the peers, their entries on this node, the source. */
import * as z from 'zod/mini';

/**
 * present: the kernel holds it as planned; missing: planned, not in the kernel; wrong: in the kernel
 * with another value; refused: the kernel refused it at the last sync (reason says why); unroutable:
 * no entry can be planned (reason says why).
 */
export const EntryStateSchema = z.enum(['present', 'missing', 'wrong', 'refused', 'unroutable']);
export type EntryState = z.infer<typeof EntryStateSchema>;

export const ClusterEntrySchema = z.strictObject({
  kind: z.enum(['route', 'neighbour', 'fdb']),
  /** Route: the destination CIDR; neighbour: the VTEP address; fdb: the VTEP MAC. */
  key: z.string(),
  /** Route: the next hop; neighbour: the MAC; fdb: the underlay address. Absent when unroutable. */
  value: z.optional(z.string()),
  state: EntryStateSchema,
  reason: z.optional(z.string()),
});
export type ClusterEntry = z.infer<typeof ClusterEntrySchema>;

export const ClusterPeerSchema = z.strictObject({
  name: z.string(),
  addresses: z.array(z.string()),
  podCIDRs: z.array(z.string()),
  /** ok: every entry present; degraded: some missing, wrong, refused or unroutable. */
  state: z.enum(['ok', 'degraded']),
  entries: z.array(ClusterEntrySchema),
});
export type ClusterPeer = z.infer<typeof ClusterPeerSchema>;

export const NodesReportSchema = z.strictObject({
  nodeName: z.optional(z.string()),
  routing: z.enum(['host-gw', 'vxlan', 'none']),
  /** Ferry's route protocol number: `ip route show proto N` lists what ferryd owns. */
  routeProtocol: z.number(),
  source: z.strictObject({
    kind: z.enum(['static', 'kubernetes']),
    lastSync: z.nullable(z.string()),
    watchRestarts: z.number(),
    lastError: z.nullable(z.string()),
  }),
  sync: z.strictObject({
    syncs: z.number(),
    failures: z.number(),
    lastSync: z.nullable(z.string()),
    lastError: z.nullable(z.string()),
    lastChanges: z.number(),
    lastDurationMs: z.number(),
  }),
  vxlan: z.optional(
    z.strictObject({
      device: z.string(),
      mac: z.string(),
      local: z.optional(z.string()),
      vni: z.number(),
      port: z.number(),
    }),
  ),
  /** Egress as set at the last kernel read: "masquerade (nft)", "masquerade (iptables)" or "off". */
  egress: z.optional(z.string()),
  peers: z.array(ClusterPeerSchema),
  /** Entries of Ferry's in the kernel that no peer accounts for (a departed node's, until the next sync). */
  stale: z.array(ClusterEntrySchema),
});
export type NodesReport = z.infer<typeof NodesReportSchema>;
