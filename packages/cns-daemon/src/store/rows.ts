/**
 * Row schemas: rows come back from a file another process (or an older ferryd) may have written, so
 * they are parsed like any other input before they become domain types. A row that fits is accepted by
 * the check generated from its schema (row-checks.js, scripts/checks); zod parses the rest and words
 * what is wrong. zod/mini, the one flavour everywhere: with the generated checks in front, zod parses
 * only rows that do not fit, where classic zod's faster objects no longer pay for a second flavour.
 */

import { FamilySchema } from '@ferry/shared-types/api/common';
import { InterfaceStateSchema } from '@ferry/shared-types/api/endpoints';
import { AddressStateSchema } from '@ferry/shared-types/api/operator';
import { SupportedNicTypeSchema } from '@ferry/shared-types/nic';
import { describeFirstIssue } from '@ferry/shared-types/parse';
import * as z from 'zod/mini';

const Int = z.int();
const OptText = z.nullable(z.string());
const OptInt = z.nullable(Int);

export const AttachmentRowSchema = z.object({
  generation: Int,
  network: z.string(),
  container_id: z.string(),
  if_name: z.string(),
  netns: z.string(),
  pod_namespace: OptText,
  pod_name: OptText,
  pod_uid: OptText,
  pod_infra_container_id: OptText,
  state: InterfaceStateSchema,
  created_at_ms: Int,
  updated_at_ms: Int,
  adopted_at_ms: OptInt,
});
export type AttachmentRow = z.infer<typeof AttachmentRowSchema>;

export const InterfaceRowSchema = z.object({
  id: Int,
  attachment_id: Int,
  position: Int,
  container_id: z.string(),
  if_name: z.string(),
  endpoint_id: z.string(),
  nic_type: SupportedNicTypeSchema,
  routes_json: z.string(),
  mac: OptText,
  container_if_index: OptInt,
  host_veth_name: OptText,
  host_if_name: OptText,
  device_mac: OptText,
  static_addresses_json: OptText,
});
export type InterfaceRow = z.infer<typeof InterfaceRowSchema>;

export const AddressRowSchema = z.object({
  pool_id: Int,
  offset_hex: z.string(),
  address: z.string(),
  state: AddressStateSchema,
  interface_id: OptInt,
  since_ms: Int,
  available_at_ms: OptInt,
});
export type AddressRow = z.infer<typeof AddressRowSchema>;

export const DeviceRowSchema = z.object({
  /** The device's identity (deviceIdOf): its PCI address, or its MAC when it has no PCI parent. */
  id: z.string(),
  /** The MAC it was last seen with. */
  mac: OptText,
  grp: z.string(),
  host_if_name: OptText,
  present: z.union([z.literal(0), z.literal(1)]),
  interface_id: OptInt,
  reserved_namespace: OptText,
  reserved_pod: OptText,
  reserved_if_name: OptText,
  reserved_json: OptText,
  seen_at_ms: OptInt,
});
export type DeviceRow = z.infer<typeof DeviceRowSchema>;

export const PoolRowSchema = z.object({
  id: Int,
  network: z.string(),
  family: FamilySchema,
  subnet: z.string(),
  cursor_hex: OptText,
});
export type PoolRow = z.infer<typeof PoolRowSchema>;

/** A block of a range this node holds or gives back (migration 0004). */
export const BlockRowSchema = z.object({
  pool_id: Int,
  cidr: z.string(),
  name: z.string(),
  uid: z.string(),
  state: z.enum(['held', 'releasing']),
  claimed_at_ms: Int,
  empty_since_ms: OptInt,
});
export type BlockRow = z.infer<typeof BlockRowSchema>;

/** An IPClaim this node made for a static address (migration 0004). */
export const StaticClaimRowSchema = z.object({
  address: z.string(),
  name: z.string(),
  uid: z.string(),
  state: z.enum(['held', 'releasing']),
  pod_namespace: z.string(),
  pod_name: z.string(),
  pod_uid: z.string(),
  claimed_at_ms: Int,
});
export type StaticClaimRow = z.infer<typeof StaticClaimRowSchema>;

/** `addressesOf`: an address with its pool's family. */
export const FamilyAddressRowSchema = z.extend(AddressRowSchema, { family: FamilySchema });

/** The operator's address list: an address with its network, family and attachment. */
export const AddressListRowSchema = z.extend(AddressRowSchema, {
  network: z.string(),
  family: FamilySchema,
  container_id: OptText,
  if_name: OptText,
});
export type AddressListRow = z.infer<typeof AddressListRowSchema>;

/** A device with the attachment it serves. */
export const AssignmentRowSchema = z.extend(DeviceRowSchema, {
  container_id: OptText,
  if_name: OptText,
  attachment_state: OptText,
  attachment_updated_at_ms: z.nullable(z.number()),
  pod_namespace: OptText,
  pod_name: OptText,
});
export type DeviceWithAssignment = z.infer<typeof AssignmentRowSchema>;

/** An interface's static addresses (JSON text) and the pod of its attachment. */
export const StaticAddressesRowSchema = z.object({ json: z.string(), pod_namespace: OptText, pod_name: OptText });
export type StaticAddressesRow = z.infer<typeof StaticAddressesRowSchema>;

/** Aggregates. */
export const CountSchema = z.object({ n: z.number() });
export const CursorSchema = z.nullable(z.string());
/** sqlite_sequence's value for a table (none before its first row). */
export const SequenceSchema = z.nullable(Int);
/** A node_state value. */
export const NodeStateValueSchema = OptText;
export const StateCountSchema = z.object({ pool_id: z.number(), state: z.string(), n: z.number() });
export const InterfaceCountSchema = z.object({ network: z.string(), nicType: z.string(), n: z.number() });
export type InterfaceCount = z.infer<typeof InterfaceCountSchema>;

/**
 * Parses one row: a row `isRow` (the check generated from `schema`, row-checks.js) accepts is returned as
 * it is, anything else is parsed by zod; a row that does not fit is a corrupt store and is reported as such.
 */
export function parseRow<T>(
  schema: z.ZodMiniType<T>,
  row: unknown,
  table: string,
  isRow?: (row: unknown) => row is T,
): T {
  if (isRow?.(row)) return row;
  const r = z.safeParse(schema, row);
  if (r.success) return r.data;
  throw new Error(`corrupt ${table} row ${JSON.stringify(row)}: ${describeFirstIssue(r.error)}`);
}
