/** The parts of `ip -j` output Ferry reads. iproute2 adds fields freely, so objects stay loose. */
import * as z from 'zod/mini';

export const IpLinkSchema = z.looseObject({
  ifindex: z.number(),
  ifname: z.string(),
  address: z.optional(z.string()),
  /** The burned-in MAC, when the driver reports one and the current MAC differs. */
  permaddr: z.optional(z.string()),
  mtu: z.optional(z.number()),
  operstate: z.optional(z.string()),
  flags: z.optional(z.array(z.string())),
  ifalias: z.optional(z.string()),
  /** The link group: "default", a name from /etc/iproute2/group, or the number. */
  group: z.optional(z.string()),
  link_type: z.optional(z.string()),
  linkinfo: z.optional(
    z.looseObject({
      info_kind: z.optional(z.string()),
      /** The kind's own settings; for a VXLAN device its VNI, port, local end and learning. */
      info_data: z.optional(
        z.looseObject({
          id: z.optional(z.number()),
          port: z.optional(z.number()),
          local: z.optional(z.string()),
          local6: z.optional(z.string()),
          learning: z.optional(z.boolean()),
        }),
      ),
    }),
  ),
});
export type IpLink = z.infer<typeof IpLinkSchema>;
export const IpLinkListSchema = z.array(IpLinkSchema);

export const IpAddrInfoSchema = z.looseObject({
  family: z.string(),
  local: z.string(),
  prefixlen: z.number(),
  scope: z.optional(z.string()),
});
export const IpAddrLinkSchema = z.looseObject({
  ifindex: z.number(),
  ifname: z.string(),
  address: z.optional(z.string()),
  flags: z.optional(z.array(z.string())),
  addr_info: z.array(IpAddrInfoSchema),
});
export type IpAddrLink = z.infer<typeof IpAddrLinkSchema>;
export const IpAddrListSchema = z.array(IpAddrLinkSchema);

export const IpRouteSchema = z.looseObject({
  dst: z.string(),
  gateway: z.optional(z.string()),
  dev: z.optional(z.string()),
  table: z.optional(z.string()),
  type: z.optional(z.string()),
  scope: z.optional(z.string()),
  protocol: z.optional(z.string()),
  pref: z.optional(z.string()),
  flags: z.optional(z.array(z.string())),
});
export type IpRoute = z.infer<typeof IpRouteSchema>;
export const IpRouteListSchema = z.array(IpRouteSchema);

/** `ip -j neigh show dev X`. */
export const NeighbourSchema = z.looseObject({
  dst: z.string(),
  lladdr: z.optional(z.string()),
  state: z.optional(z.array(z.string())),
});
export type Neighbour = z.infer<typeof NeighbourSchema>;
export const NeighbourListSchema = z.array(NeighbourSchema);

/** `bridge -j fdb show dev X`. */
export const FdbEntrySchema = z.looseObject({
  mac: z.string(),
  dst: z.optional(z.string()),
  flags: z.optional(z.array(z.string())),
  state: z.optional(z.string()),
});
export type FdbEntry = z.infer<typeof FdbEntrySchema>;
export const FdbListSchema = z.array(FdbEntrySchema);

/** `ip -j route get DST`. */
export const RouteGetSchema = z.array(
  z.looseObject({ dst: z.string(), dev: z.optional(z.string()), prefsrc: z.optional(z.string()) }),
);
