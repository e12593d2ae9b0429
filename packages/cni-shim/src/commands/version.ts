import { LATEST_VERSION, SUPPORTED_VERSIONS } from '@ferry/shared-types/cni/versions';

/** VERSION: the config's cniVersion echoed (1.1.0 without stdin) and every version Ferry speaks. */
export function cmdVersion(declared: string | undefined): { cniVersion: string; supportedVersions: string[] } {
  return { cniVersion: declared ?? LATEST_VERSION, supportedVersions: [...SUPPORTED_VERSIONS] };
}

/** What `ferry-cni` prints to stderr when run with no CNI_COMMAND. */
export function aboutText(): string {
  return `ferry-cni: the Ferry CNI plugin (stateless shim for ferryd)\nCNI protocol versions supported: ${SUPPORTED_VERSIONS.join(', ')}\n`;
}
