/** The operator API: read state, pool usage and per-address state; force-delete endpoints; reconcile. */
import * as z from 'zod/mini';
import { NetworkNameSchema } from '../cni/names';
import { SupportedNicTypeSchema } from '../nic';
import { FamilySchema } from './common';
import { EndpointSchema } from './endpoints';

export const EndpointListQuerySchema = z.strictObject({
  namespace: z.optional(z.string()),
  pod: z.optional(z.string()),
  network: z.optional(NetworkNameSchema),
  nicType: z.optional(SupportedNicTypeSchema),
});
export type EndpointListQuery = z.infer<typeof EndpointListQuerySchema>;

export const EndpointListSchema = z.strictObject({ endpoints: z.array(EndpointSchema) });
export type EndpointList = z.infer<typeof EndpointListSchema>;

/** The states an address is stored in; an Available address has no row and is never listed. */
export const AddressStateSchema = z.enum(['Assigned', 'PendingRelease']);
export type AddressState = z.infer<typeof AddressStateSchema>;

export const PoolUsageSchema = z.strictObject({
  network: NetworkNameSchema,
  family: FamilySchema,
  subnet: z.string(),
  rangeStart: z.string(),
  rangeEnd: z.string(),
  /** Addresses in the range minus exclusions, in decimal (a /64 does not fit a JSON number). */
  size: z.string(),
  assigned: z.number().check(z.int()),
  pendingRelease: z.number().check(z.int()),
  /** size − assigned − pendingRelease, in decimal. */
  free: z.string(),
  cooldownSec: z.number(),
});
export type PoolUsage = z.infer<typeof PoolUsageSchema>;

export const PoolListSchema = z.strictObject({ pools: z.array(PoolUsageSchema) });

export const AddressListQuerySchema = z.strictObject({
  network: z.optional(NetworkNameSchema),
  state: z.optional(AddressStateSchema),
});

/** One address that is not Available (Available addresses are not stored, so a /64 costs nothing). */
export const AddressRecordSchema = z.strictObject({
  network: NetworkNameSchema,
  family: FamilySchema,
  address: z.string(),
  state: AddressStateSchema,
  containerId: z.optional(z.string()),
  ifName: z.optional(z.string()),
  /** When it entered this state (ISO 8601). */
  since: z.string(),
  /** PendingRelease: when it becomes Available again. */
  availableAt: z.optional(z.string()),
});
export type AddressRecord = z.infer<typeof AddressRecordSchema>;

export const AddressListSchema = z.strictObject({ addresses: z.array(AddressRecordSchema) });

export const ReconcileResultSchema = z.strictObject({
  /** PendingRelease addresses whose cooldown had passed and became Available. */
  cooledDown: z.number().check(z.int()),
  /** Endpoints released because their netns had been gone for longer than the grace period. */
  staleReleased: z.number().check(z.int()),
  /** Delegated devices found back on the node without a DEL (their pod's netns died), now free. */
  devicesRefunded: z.number().check(z.int()),
  /** Delegated devices renamed back to their recorded host name. */
  devicesRenamed: z.number().check(z.int()),
  /** Delete-queue entries applied. */
  queueApplied: z.number().check(z.int()),
  /** Attachments the node showed (host veth markers) and the database did not hold, now held again. */
  adopted: z.number().check(z.int()),
  /** Adopted attachments released because their host veth was gone. */
  adoptedReleased: z.number().check(z.int()),
  /** Endpoints released at once because the node booted again and their netns was gone. */
  releasedAfterReboot: z.number().check(z.int()),
});
export type ReconcileResult = z.infer<typeof ReconcileResultSchema>;

/** One broken invariant of the store (ferryctl doctor shows these). */
export const ViolationSchema = z.strictObject({
  kind: z.enum([
    'address-without-endpoint',
    'endpoint-without-address',
    'address-twice',
    'attachment-without-interfaces',
    'address-outside-pool',
    'device-twice',
    'netns-missing',
    'device-misplaced',
    'queue-failed',
    'queue-stuck',
    'peer-entry-missing',
    'peer-unroutable',
    'cluster-entry-stale',
    'cluster-sync-failing',
    'device-plugin-unregistered',
    'database-recovered',
    'block-conflict',
  ]),
  /** What it is about: an address, a containerId/ifName, a MAC, a peer node. */
  subject: z.string(),
  msg: z.string(),
});
export type Violation = z.infer<typeof ViolationSchema>;

export const InvariantReportSchema = z.strictObject({
  ok: z.boolean(),
  violations: z.array(ViolationSchema),
});
export type InvariantReport = z.infer<typeof InvariantReportSchema>;

/** Operator GC: what would go (dry run) or went. */
export const OperatorGcRequestSchema = z.strictObject({
  network: z.optional(NetworkNameSchema),
  /** Container IDs that are alive (e.g. from `crictl pods -q`); anything else is a candidate. */
  keep: z.optional(z.array(z.string())),
  /** Without it nothing is released: the answer lists the candidates. */
  apply: z._default(z.boolean(), false),
});
export type OperatorGcRequest = z.infer<typeof OperatorGcRequestSchema>;

export const OperatorGcResultSchema = z.strictObject({
  applied: z.boolean(),
  candidates: z.array(
    z.strictObject({
      containerId: z.string(),
      ifName: z.string(),
      network: z.string(),
      netns: z.string(),
      reason: z.enum(['netns-missing', 'not-kept']),
    }),
  ),
});
export type OperatorGcResult = z.infer<typeof OperatorGcResultSchema>;
