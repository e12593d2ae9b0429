/**
 * Which delegated-device groups ferryd serves to the kubelet as resources, and the resources' names:
 * without the gRPC client (services.ts and every ADD's choice need them; the device plugin itself is
 * loaded only when configured).
 */
import type { FerrydConfig } from '@ferry/shared-types/config/ferryd';

/** What the kubelet allocated to a pod, by served group: device IDs as the device plugin advertises them (PCI addresses; MACs without a PCI parent). */
export type KubeletAllocation = ReadonlyMap<string, readonly string[]>;

/** A delegated device an attachment released (its identity, or its MAC), and since when the attachment held it. */
export interface ReleasedDevice {
  id: string;
  heldSinceMs: number;
}

/** The extended resource a served group is (the kubelet's name for it). */
export const resourceOf = (group: string) => `ferry.dev/${group}`;

/** The groups of `devicePlugin.groups`, by default every group of `delegatedDevices`; none when the plugin is off. */
export function servedGroupsOf(config: Pick<FerrydConfig, 'devicePlugin' | 'delegatedDevices'>): ReadonlySet<string> {
  if (!config.devicePlugin) return new Set();
  return new Set(config.devicePlugin.groups ?? config.delegatedDevices.map((d) => d.group));
}
