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
  linkinfo: z.optional(z.looseObject({ info_kind: z.optional(z.string()) })),
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
});
export type IpRoute = z.infer<typeof IpRouteSchema>;
export const IpRouteListSchema = z.array(IpRouteSchema);
