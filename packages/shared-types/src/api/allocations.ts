/**
 * POST /v1/allocations — the first step of ADD. Idempotent per (network, containerId, ifName): a repeated
 * request returns the same plan (same addresses, same devices, same generation) until the attachment is
 * committed or released. An ADD of a committed attachment is refused (code 105): the spec forbids a
 * second ADD without a DEL, and building it again would tear down the live pod's interfaces.
 */
import * as z from 'zod/mini';
import { DelegatedNicsRequestSchema } from '../cni/config';
import { DnsSchema } from '../cni/dns';
import { IfNameSchema } from '../cni/names';
import {
  AssignedAddressSchema,
  AttachmentKeySchema,
  MacSchema,
  PciAddressSchema,
  PodRefSchema,
  PodRouteSchema,
} from './common';

export const AllocateRequestSchema = z.extend(AttachmentKeySchema, {
  /** CNI_NETNS: stored so DEL and the reconciler can find the pod's namespace without the runtime. */
  netns: z.string().check(z.minLength(1), z.maxLength(4096)),
  pod: z.optional(PodRefSchema),
  delegatedNICs: z.optional(DelegatedNicsRequestSchema),
  /**
   * runtimeConfig.deviceID: the device the runtime chose (Multus passes what the SR-IOV device plugin
   * allocated), a PCI address; a secondary network's attachment is that device.
   */
  deviceId: z.optional(z.string().check(z.maxLength(64))),
});
export type AllocateRequest = z.infer<typeof AllocateRequestSchema>;

/** The InfraNIC of the plan: a routed veth pair. */
export const InfraNicPlanSchema = z.strictObject({
  nicType: z.literal('InfraNIC'),
  ifName: IfNameSchema,
  endpointId: z.string(),
  /** Deterministic from (containerId, ifName), so DEL finds it even when ADD died before commit. */
  hostVethName: IfNameSchema,
  /** The fixed MAC of every host veth; the pod's gateway neighbour entry points at it. */
  hostVethMac: MacSchema,
  /**
   * The host veth's marker (shared-types/link-marker.ts), written with the request that sets it up: from
   * it ferryd rebuilds the attachment if its database loses it.
   */
  hostVethAlias: z.string().check(z.maxLength(255)),
  addresses: z.array(AssignedAddressSchema),
  routes: z.array(PodRouteSchema),
  mtu: z.optional(z.number().check(z.int())),
});
export type InfraNicPlan = z.infer<typeof InfraNicPlanSchema>;

/** A DelegatedNIC of the plan: a host device to move into the pod. */
export const DelegatedNicPlanSchema = z.strictObject({
  nicType: z.literal('DelegatedNIC'),
  ifName: IfNameSchema,
  endpointId: z.string(),
  /** The device's MAC: how the shim finds it on the host. */
  mac: MacSchema,
  /** Its name on the host, restored on DEL. */
  hostIfName: IfNameSchema,
  /** Its PCI address, where sysfs gives it one (the result's `pciID`). */
  pciAddress: z.optional(PciAddressSchema),
  addresses: z.array(AssignedAddressSchema),
  routes: z.array(PodRouteSchema),
});
export type DelegatedNicPlan = z.infer<typeof DelegatedNicPlanSchema>;

/**
 * A DelegatedNIC that is a userspace device: a VF bound to `vfio-pci` for DPDK, with no netdev. Nothing is
 * moved or addressed: the container opens it through the `/dev/vfio` devices the device plugin gave it, and
 * the attachment records that the pod holds it. Its identity is its PCI address (it has no MAC); `ifName`
 * is the attachment's name for it, as sriov-cni keeps CNI_IFNAME for a DPDK-mode VF.
 */
export const UserspaceNicPlanSchema = z.strictObject({
  nicType: z.literal('DelegatedNIC'),
  ifName: IfNameSchema,
  endpointId: z.string(),
  userspace: z.literal(true),
  pciAddress: PciAddressSchema,
  /** Always empty (no netdev to address or route), so every NIC of a plan has both lists. */
  addresses: z.array(AssignedAddressSchema).check(z.maxLength(0)),
  routes: z.array(PodRouteSchema).check(z.maxLength(0)),
});
export type UserspaceNicPlan = z.infer<typeof UserspaceNicPlanSchema>;

/** A plain union: a userspace device is a DelegatedNIC too, told apart by `userspace`. */
export const NicPlanSchema = z.union([InfraNicPlanSchema, DelegatedNicPlanSchema, UserspaceNicPlanSchema]);
export type NicPlan = z.infer<typeof NicPlanSchema>;

export const AllocationSchema = z.extend(AttachmentKeySchema, {
  /** Grows every time the attachment is allocated anew; commit must quote it. */
  generation: z.number().check(z.int(), z.positive()),
  /**
   * InfraNIC first, then delegated NICs in ifName order. A secondary network's attachment (no InfraNIC)
   * is one DelegatedNIC named CNI_IFNAME.
   */
  nics: z.array(NicPlanSchema),
  dns: z.optional(DnsSchema),
});
export type Allocation = z.infer<typeof AllocationSchema>;
