/**
 * CNI results, one schema per spec version (SPEC.md §5, pkg/types/040 and pkg/types/100).
 * 0.3.0, 0.3.1 and 0.4.0 share a shape with a required ips[].version; 1.0.0 and 1.1.0 share a shape
 * without it, with interfaces[].mtu/socketPath/pciID. These schemas are strict: they describe exactly
 * what a plugin of that version may print.
 */
import * as z from 'zod/mini';
import { DnsSchema } from './dns';
import type { CniVersion } from './versions';

const Cidr = z.union([z.cidrv4(), z.cidrv6()]);
const Ip = z.union([z.ipv4(), z.ipv6()]);

/** A route as every version prints it (the Go Route type is shared between 0.4.0 and 1.x). */
export const RouteSchema = z.strictObject({
  dst: Cidr,
  gw: z.optional(Ip),
  mtu: z.optional(z.number().check(z.int())),
  advmss: z.optional(z.number().check(z.int())),
  priority: z.optional(z.number().check(z.int())),
  table: z.optional(z.number().check(z.int())),
  scope: z.optional(z.number().check(z.int())),
});
export type Route = z.infer<typeof RouteSchema>;

/** DNS settings (SPEC.md §5 "DNS"). */

const InterfaceV04Schema = z.strictObject({
  name: z.string(),
  mac: z.optional(z.string()),
  sandbox: z.optional(z.string()),
});
const InterfaceV1Schema = z.strictObject({
  name: z.string(),
  mac: z.optional(z.string()),
  mtu: z.optional(z.number().check(z.int())),
  sandbox: z.optional(z.string()),
  socketPath: z.optional(z.string()),
  pciID: z.optional(z.string()),
});
export type InterfaceV1 = z.infer<typeof InterfaceV1Schema>;

const IpConfigV04Schema = z.strictObject({
  version: z.enum(['4', '6']),
  address: Cidr,
  gateway: z.optional(Ip),
  interface: z.optional(z.number().check(z.int(), z.nonnegative())),
});
const IpConfigV1Schema = z.strictObject({
  address: Cidr,
  gateway: z.optional(Ip),
  interface: z.optional(z.number().check(z.int(), z.nonnegative())),
});
export type IpConfigV1 = z.infer<typeof IpConfigV1Schema>;

function resultV04<V extends '0.3.0' | '0.3.1' | '0.4.0'>(version: V) {
  return z.strictObject({
    cniVersion: z.literal(version),
    interfaces: z.optional(z.array(InterfaceV04Schema)),
    ips: z.optional(z.array(IpConfigV04Schema)),
    routes: z.optional(z.array(RouteSchema)),
    dns: z.optional(DnsSchema),
  });
}
function resultV1<V extends '1.0.0' | '1.1.0'>(version: V) {
  return z.strictObject({
    cniVersion: z.literal(version),
    interfaces: z.optional(z.array(InterfaceV1Schema)),
    ips: z.optional(z.array(IpConfigV1Schema)),
    routes: z.optional(z.array(RouteSchema)),
    dns: z.optional(DnsSchema),
  });
}

export const ResultV030Schema = resultV04('0.3.0');
export const ResultV031Schema = resultV04('0.3.1');
export const ResultV040Schema = resultV04('0.4.0');
export const ResultV100Schema = resultV1('1.0.0');
export const ResultV110Schema = resultV1('1.1.0');
export type ResultV04 =
  | z.infer<typeof ResultV040Schema>
  | z.infer<typeof ResultV030Schema>
  | z.infer<typeof ResultV031Schema>;
export type ResultV1 = z.infer<typeof ResultV100Schema> | z.infer<typeof ResultV110Schema>;
export type Result = ResultV04 | ResultV1;

const BY_VERSION = {
  '0.3.0': ResultV030Schema,
  '0.3.1': ResultV031Schema,
  '0.4.0': ResultV040Schema,
  '1.0.0': ResultV100Schema,
  '1.1.0': ResultV110Schema,
} as const satisfies Record<CniVersion, z.ZodMiniType>;

/** The strict result schema of one spec version. */
export function resultSchemaFor(v: CniVersion): (typeof BY_VERSION)[CniVersion] {
  return BY_VERSION[v];
}
