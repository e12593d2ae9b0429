/**
 * Result conversion between spec versions, as pkg/types/100 and pkg/types/040 do it:
 * 1.x → 0.3.x/0.4.0 adds ips[].version from the address family and drops interfaces' mtu,
 * socketPath and pciID; 0.x → 1.x drops ips[].version; 1.0.0 ⇄ 1.1.0 only changes the version.
 */
import type { AnyResult } from './any-result';
import { type CniVersion, specHas } from './versions';

const V1_ONLY_INTERFACE_KEYS = ['mtu', 'socketPath', 'pciID'] as const;

/** Returns `result` as `to` would print it. Never mutates its input. */
export function convertResult(result: AnyResult, to: CniVersion): AnyResult {
  const old = specHas.ipVersion(to);
  const out: AnyResult = { ...result, cniVersion: to };
  if (result.interfaces) {
    out.interfaces = result.interfaces.map((itf) => {
      if (!old) return { ...itf };
      const copy: Record<string, unknown> & { name: string } = { ...itf };
      for (const k of V1_ONLY_INTERFACE_KEYS) delete copy[k];
      return copy;
    });
  }
  if (result.ips) {
    out.ips = result.ips.map((ip) => {
      const { version: _dropped, ...rest } = ip;
      if (!old) return rest;
      // version comes first in the Go struct's JSON; keep that order for byte-identical goldens.
      return { version: ip.address.includes(':') ? '6' : '4', ...rest };
    });
  }
  if (result.routes) out.routes = result.routes.map((r) => ({ ...r }));
  if (result.dns) out.dns = { ...result.dns };
  return out;
}
