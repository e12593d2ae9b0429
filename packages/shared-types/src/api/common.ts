/** Building blocks of ferryd's API (v1). */
import * as z from 'zod/mini';
import { ContainerIdSchema, IfNameSchema, NetworkNameSchema } from '../cni/names';

export const FamilySchema = z.union([z.literal(4), z.literal(6)]);
export type Family = z.infer<typeof FamilySchema>;

/** An address as assigned to a pod interface: `10.244.1.5/32`, with the gateway the pod routes through. */
export const AssignedAddressSchema = z.strictObject({
  family: FamilySchema,
  address: z.union([z.cidrv4(), z.cidrv6()]),
  gateway: z.optional(z.union([z.ipv4(), z.ipv6()])),
});
export type AssignedAddress = z.infer<typeof AssignedAddressSchema>;

/** A route to install in the pod; without gw it is a link route. */
export const PodRouteSchema = z.strictObject({
  dst: z.union([z.cidrv4(), z.cidrv6()]),
  gw: z.optional(z.union([z.ipv4(), z.ipv6()])),
});
export type PodRoute = z.infer<typeof PodRouteSchema>;

/** The pod a request is for, from CNI_ARGS (all optional: not every runtime is kubelet). */
export const PodRefSchema = z.strictObject({
  namespace: z.optional(z.string().check(z.maxLength(253))),
  name: z.optional(z.string().check(z.maxLength(253))),
  uid: z.optional(z.string().check(z.maxLength(128))),
  infraContainerId: z.optional(z.string().check(z.maxLength(255))),
});
export type PodRef = z.infer<typeof PodRefSchema>;

/** One attachment, as the CNI spec identifies it: (network, containerID, ifName). */
export const AttachmentKeySchema = z.strictObject({
  network: NetworkNameSchema,
  containerId: ContainerIdSchema,
  ifName: IfNameSchema,
});
export type AttachmentKey = z.infer<typeof AttachmentKeySchema>;

export const ContainerIdParamsSchema = z.strictObject({ containerId: ContainerIdSchema });

export const MacSchema = z.mac();

/** A PCI address as sysfs spells it (domain:bus:device.function, lower case): `0000:18:02.5`. */
export const PciAddressSchema = z
  .string()
  .check(z.regex(/^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$/, { message: 'not a PCI address like 0000:18:02.5' }));
