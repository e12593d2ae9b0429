/**
 * Endpoint state: one record per pod interface, keyed by (containerId, ifName). PUT commits what only
 * the shim knows after building the NICs; GET returns every interface of a container; DELETE releases an
 * attachment's addresses and state in one transaction (or, asked conditionally, says what to tear down first).
 */
import * as z from 'zod/mini';
import { IfNameSchema, NetworkNameSchema } from '../cni/names';
import { SupportedNicTypeSchema } from '../nic';
import { AssignedAddressSchema, MacSchema, PciAddressSchema, PodRefSchema, PodRouteSchema } from './common';

/** What the shim reports for one NIC it built. */
export const BuiltNicSchema = z.strictObject({
  ifName: IfNameSchema,
  /** The MAC the interface has inside the pod. */
  mac: MacSchema,
  /** The container-side ifindex, read after the final move into the pod. */
  containerIfIndex: z.number().check(z.int(), z.positive()),
});
export type BuiltNic = z.infer<typeof BuiltNicSchema>;

/** A userspace device of the plan (allocations.ts UserspaceNicPlan): nothing was built, it is held as planned. */
export const HeldUserspaceNicSchema = z.strictObject({
  ifName: IfNameSchema,
  userspace: z.literal(true),
});
export type HeldUserspaceNic = z.infer<typeof HeldUserspaceNicSchema>;

/** Every NIC of a plan in the commit: built, or (a userspace device) held. */
export const CommittedNicSchema = z.union([BuiltNicSchema, HeldUserspaceNicSchema]);
export type CommittedNic = z.infer<typeof CommittedNicSchema>;

export const CommitRequestSchema = z.strictObject({
  network: NetworkNameSchema,
  /** The attachment's CNI_IFNAME. */
  ifName: IfNameSchema,
  generation: z.number().check(z.int(), z.positive()),
  nics: z.array(CommittedNicSchema).check(z.minLength(1)),
});
export type CommitRequest = z.infer<typeof CommitRequestSchema>;

export const InterfaceStateSchema = z.enum(['allocated', 'committed']);

/** One interface of a pod as ferryd stores it. */
export const InterfaceRecordSchema = z.strictObject({
  containerId: z.string(),
  ifName: IfNameSchema,
  endpointId: z.string(),
  nicType: SupportedNicTypeSchema,
  network: NetworkNameSchema,
  /** CNI_IFNAME of the attachment that created this interface (its InfraNIC's name). */
  attachmentIfName: IfNameSchema,
  netns: z.string(),
  pod: PodRefSchema,
  state: InterfaceStateSchema,
  generation: z.number().check(z.int()),
  addresses: z.array(AssignedAddressSchema),
  routes: z.array(PodRouteSchema),
  mac: z.optional(MacSchema),
  containerIfIndex: z.optional(z.number().check(z.int())),
  hostVethName: z.optional(IfNameSchema),
  /** DelegatedNIC: the device's name on the host. */
  hostIfName: z.optional(IfNameSchema),
  /** DelegatedNIC: the device's MAC on the host (the inventory key). */
  deviceMac: z.optional(MacSchema),
  /**
   * DelegatedNIC: a userspace device (a VF bound to vfio-pci, no netdev): nothing of it is in the pod's
   * netns, so there is nothing to tear down or check there; its identity is `pciAddress`.
   */
  userspace: z.optional(z.literal(true)),
  /** DelegatedNIC: the device's PCI address, where it has one. */
  pciAddress: z.optional(PciAddressSchema),
  createdAt: z.string(),
  updatedAt: z.string(),
  /**
   * When ferryd rebuilt this attachment from the node (its host veth's marker) because its database did
   * not hold it: a lost, new, corrupt or restored database. Absent for attachments ferryd recorded itself.
   */
  adoptedAt: z.optional(z.string()),
});
export type InterfaceRecord = z.infer<typeof InterfaceRecordSchema>;

export const EndpointSchema = z.strictObject({
  containerId: z.string(),
  interfaces: z.array(InterfaceRecordSchema),
});
export type Endpoint = z.infer<typeof EndpointSchema>;

/** Query of DELETE /v1/endpoints/{containerId}: which attachment to release. */
export const ReleaseQuerySchema = z.strictObject({
  network: NetworkNameSchema,
  ifName: IfNameSchema,
  /**
   * Release only this generation of the attachment: an ADD rolling back passes the one it allocated,
   * so it can never release an attachment another ADD made meanwhile.
   */
  generation: z.optional(z.coerce.number().check(z.int(), z.positive())),
  /**
   * `true`: the shim's usual DEL in one request. It has already deleted the attachment's host veth (whose
   * name both sides derive from the attachment, host-veth.ts), so ferryd releases the attachment only
   * when that InfraNIC is all it has; otherwise it releases nothing and answers the attachment's
   * interfaces in `toTearDown`, for the shim to tear down before it asks for the release again without
   * this parameter.
   */
  hostVethDeleted: z.optional(z.literal('true')),
});
export type ReleaseQuery = z.infer<typeof ReleaseQuerySchema>;

export const ReleaseResultSchema = z.strictObject({
  /** Interfaces whose state was deleted (empty when nothing was stored: release is idempotent). */
  released: z.array(InterfaceRecordSchema),
  /**
   * Only with `hostVethDeleted`, when nothing was released: the attachment's interfaces, still stored,
   * that the shim must tear down first (its DelegatedNICs, to bring home).
   */
  toTearDown: z.optional(z.array(InterfaceRecordSchema)),
});
export type ReleaseResult = z.infer<typeof ReleaseResultSchema>;
