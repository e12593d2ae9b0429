import * as z from 'zod/mini';

/**
 * The NIC types (docs/architecture.md "NIC types"). BackendNIC is recognised so that a request for it gets a clear
 * UnsupportedNicType error instead of a schema failure.
 */
export const NicTypeSchema = z.enum(['InfraNIC', 'DelegatedNIC', 'BackendNIC']);
export type NicType = z.infer<typeof NicTypeSchema>;

/** The NIC types Ferry can build. */
export const SupportedNicTypeSchema = z.enum(['InfraNIC', 'DelegatedNIC']);
export type SupportedNicType = z.infer<typeof SupportedNicTypeSchema>;

/**
 * EndpointID (docs/architecture.md "State and keys"): the containerID for the InfraNIC,
 * `containerID-ifName` for a DelegatedNIC, so the two can be told apart anywhere.
 */
export function endpointIdOf(nicType: SupportedNicType, containerId: string, ifName: string): string {
  return nicType === 'InfraNIC' ? containerId : `${containerId}-${ifName}`;
}
