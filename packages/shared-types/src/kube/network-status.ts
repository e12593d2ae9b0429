/**
 * The pod annotation `k8s.v1.cni.cncf.io/network-status` (Network Plumbing WG, "Kubernetes Network Custom
 * Resource Definition De-facto Standard" v1.3 §5): a JSON list with one entry per attachment, which
 * Multus and others write too. Ferry writes entries of the shape below and tells them from everyone
 * else's by one extra key: §5.3 reserves keys without a period for the spec and asks implementations to
 * name their own keys in reverse domain notation, so `dev.ferry.attachment` can never be another
 * writer's. Other entries are kept exactly as they are, whatever they hold.
 */
import * as z from 'zod/mini';
import { AttachmentKeySchema, MacSchema } from '../api/common';
import { DnsSchema } from '../cni/dns';
import { IfNameSchema, NetworkNameSchema } from '../cni/names';
import { readJsonAs } from '../parse';
import { PciDeviceInfoSchema } from './device-info';

/** The annotation's key. */
export const NETWORK_STATUS_ANNOTATION = 'k8s.v1.cni.cncf.io/network-status';
/** The key of Ferry's entries: the attachment (network, containerId, ifName) the entry reports. */
export const FERRY_ATTACHMENT_KEY = 'dev.ferry.attachment';

/**
 * One entry as Ferry writes it: the interface inside the pod, its addresses (without prefix length, as
 * Multus writes them and its readers parse them), its MAC, whether it is the cluster-wide default
 * network's interface (only one entry of the list may be), and for a PCI device its `device-info`
 * (kube/device-info.ts: what the device plugin's file says, which Multus would copy here).
 */
export const FerryStatusEntrySchema = z.strictObject({
  name: NetworkNameSchema,
  interface: IfNameSchema,
  ips: z.array(z.union([z.ipv4(), z.ipv6()])),
  mac: z.optional(MacSchema),
  default: z.boolean(),
  dns: z.optional(DnsSchema),
  'device-info': z.optional(PciDeviceInfoSchema),
  [FERRY_ATTACHMENT_KEY]: AttachmentKeySchema,
});
export type FerryStatusEntry = z.infer<typeof FerryStatusEntrySchema>;

/** Any writer's entry: an object with a name; everything else it holds is carried over untouched. */
const AnyEntrySchema = z.looseObject({ name: z.string() });
export type NetworkStatusEntry = z.infer<typeof AnyEntrySchema>;

/** The annotation as anyone may have written it. */
export const NetworkStatusSchema = z.array(AnyEntrySchema);

/** True when `entry` is one Ferry wrote (it carries Ferry's key). */
export function isFerryEntry(entry: NetworkStatusEntry): boolean {
  return Object.hasOwn(entry, FERRY_ATTACHMENT_KEY);
}

/** Reads the annotation's text: its entries, or why it is not a network-status list. */
export function parseNetworkStatus(text: string): { entries: NetworkStatusEntry[] } | { problem: string } {
  const r = readJsonAs(NetworkStatusSchema, text);
  return 'value' in r ? { entries: r.value } : r;
}
