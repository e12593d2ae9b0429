/**
 * The delegated-NIC inventory (operator API): every delegatable host device, keyed by its identity (its PCI
 * address, or its MAC when it has no PCI parent), its state, who holds it, and an operator's pre-assignment
 * of it to a pod.
 */
import * as z from 'zod/mini';
import { IfNameSchema, NetworkNameSchema } from '../cni/names';
import { AssignedAddressSchema, MacSchema, PciAddressSchema, PodRouteSchema } from './common';

/** free: on the node, nobody holds it; assigned: a pod holds it; missing: configured but not on the node. */
export const DeviceStateSchema = z.enum(['free', 'assigned', 'missing']);
export type DeviceState = z.infer<typeof DeviceStateSchema>;

export const ReservationRequestSchema = z.strictObject({
  namespace: z.string().check(z.minLength(1), z.maxLength(253)),
  pod: z.string().check(z.minLength(1), z.maxLength(253)),
  /** The name the device gets in the pod (default: the next free netN). */
  ifName: z.optional(IfNameSchema),
  addresses: z._default(z.array(AssignedAddressSchema), []),
  routes: z._default(z.array(PodRouteSchema), []),
});
export type ReservationRequest = z.infer<typeof ReservationRequestSchema>;

export const DeviceSchema = z.strictObject({
  /** Its identity: the PCI address of a device with a PCI parent, else its MAC. */
  id: z.string(),
  /** The MAC it was last seen with (none: a function without a netdev). */
  mac: z.optional(MacSchema),
  group: NetworkNameSchema,
  hostIfName: z.optional(z.string()),
  /** Its PCI address, where sysfs gives it one. */
  pciAddress: z.optional(PciAddressSchema),
  state: DeviceStateSchema,
  assignedTo: z.optional(
    z.strictObject({
      containerId: z.string(),
      ifName: z.string(),
      podNamespace: z.optional(z.string()),
      podName: z.optional(z.string()),
    }),
  ),
  reservation: z.optional(ReservationRequestSchema),
  /**
   * Its PF's netdev, while the device is a VF whose PF has no carrier: the device plugin reports it
   * Unhealthy (a VF cannot pass traffic then, though its own netdev stays).
   */
  pfWithoutCarrier: z.optional(z.string()),
  lastSeen: z.optional(z.string()),
});
export type Device = z.infer<typeof DeviceSchema>;

export const DeviceListSchema = z.strictObject({ devices: z.array(DeviceSchema) });

/** A device as an operator names it: its PCI address, or a MAC (only one device may have it). */
export const DeviceParamsSchema = z.strictObject({ device: z.union([PciAddressSchema, MacSchema]) });
