/** The CNI spec versions ferry-cni speaks, oldest first (SPEC.md; 0.1.0/0.2.0 results are not produced). */
export const SUPPORTED_VERSIONS = ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'] as const;
export type CniVersion = (typeof SUPPORTED_VERSIONS)[number];

/** What VERSION answers when stdin names no version. */
export const LATEST_VERSION: CniVersion = '1.1.0';

/** A config without cniVersion is 0.1.0 (libcni's DecodeVersion). */
export const IMPLICIT_VERSION = '0.1.0';

/** True when `v` is exactly one of SUPPORTED_VERSIONS (skel requires an exact match). */
export function isSupportedVersion(v: string): v is CniVersion {
  return (SUPPORTED_VERSIONS as readonly string[]).includes(v);
}

/** Compares dotted versions numerically: negative when a < b. Non-numeric parts compare as 0. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map((p) => Number.parseInt(p, 10) || 0);
  const pb = b.split('.').map((p) => Number.parseInt(p, 10) || 0);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** Capabilities that depend on the spec version, named as pkg/testutils names them. */
export const specHas = {
  /** CHECK exists from 0.4.0 on. */
  check: (v: string) => compareVersions(v, '0.4.0') >= 0,
  /** STATUS and GC exist from 1.1.0 on. */
  status: (v: string) => compareVersions(v, '1.1.0') >= 0,
  /** Results carry ips[].version below 1.0.0. */
  ipVersion: (v: string) => compareVersions(v, '1.0.0') < 0,
} as const;
