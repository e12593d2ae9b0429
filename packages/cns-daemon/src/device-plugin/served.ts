/**
 * Which delegated-device groups ferryd serves to the kubelet as resources: without the gRPC client
 * (services.ts needs it at every start; the device plugin itself is loaded only when configured).
 */
import type { FerrydConfig } from '@ferry/shared-types/config/ferryd';

/** The groups of `devicePlugin.groups`, by default every group of `delegatedDevices`; none when the plugin is off. */
export function servedGroupsOf(config: Pick<FerrydConfig, 'devicePlugin' | 'delegatedDevices'>): ReadonlySet<string> {
  if (!config.devicePlugin) return new Set();
  return new Set(config.devicePlugin.groups ?? config.delegatedDevices.map((d) => d.group));
}
