/**
 * Row schemas: rows come back from a file another process (or an older ferryd) may have written, so
 * they are parsed like any other input before they become domain types. A row that fits is accepted by
 * a hand check derived from its schema (row-check.ts); zod parses the rest and words what is wrong.
 * Classic zod, not zod/mini: its objects compile a parser on first use, 2–3× faster at parsing a row.
 */

import { FamilySchema } from '@ferry/shared-types/api/common';
import { InterfaceStateSchema } from '@ferry/shared-types/api/endpoints';
import { AddressStateSchema } from '@ferry/shared-types/api/operator';
import type { Check } from '@ferry/shared-types/hand-check';
import { SupportedNicTypeSchema } from '@ferry/shared-types/nic';
import { describeFirstIssue } from '@ferry/shared-types/parse';
import * as z from 'zod';
import { rowCheckOf } from './row-check';

const Int = z.int();
const OptText = z.nullable(z.string());
const OptInt = z.nullable(Int);

export const AttachmentRowSchema = z.object({
  id: Int,
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
  mac: z.string(),
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

/** Each schema's hand check (row-check.ts), derived on first use; null where it has none. */
const checks = new WeakMap<z.core.$ZodType, Check | null>();

/** Parses one row; a row that does not fit is a corrupt store and is reported as such. */
export function parseRow<T>(schema: z.core.$ZodType<T>, row: unknown, table: string): T {
  let check = checks.get(schema);
  if (check === undefined) {
    check = rowCheckOf(schema) ?? null;
    checks.set(schema, check);
  }
  // What the hand check accepts, zod returns as it is.
  if (check?.(row)) return row as T;
  const r = z.safeParse(schema, row);
  if (r.success) return r.data;
  throw new Error(`corrupt ${table} row ${JSON.stringify(row)}: ${describeFirstIssue(r.error)}`);
}
