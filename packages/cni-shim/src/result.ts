/**
 * The ADD result: the host veth and the pod interface (as ptp reports both), each address with the
 * index of the pod interface, the pod's routes and DNS; appended to a chained prevResult; printed in
 * the config's cniVersion.
 */
import type { Allocation } from '@ferry/shared-types/api/allocations';
import { type AnyResult, AnyResultSchema } from '@ferry/shared-types/cni/any-result';
import { convertResult } from '@ferry/shared-types/cni/convert';
import { Code } from '@ferry/shared-types/errors';
import { parseAs } from '@ferry/shared-types/parse';
import type { ShimConf } from './config';
import type { BuiltInfraNic } from './nic/infra';

export interface BuiltNics {
  infra: BuiltInfraNic;
}

export function toResult(conf: ShimConf, netns: string, alloc: Allocation, built: BuiltNics): AnyResult {
  const prev: AnyResult = conf.prevResult
    ? parseAs(AnyResultSchema, conf.prevResult, Code.InvalidConfig, 'invalid network config: prevResult')
    : {};
  const interfaces = [...(prev.interfaces ?? [])];
  const ips = [...(prev.ips ?? [])];
  const routes = [...(prev.routes ?? [])];

  const { infra } = built;
  const infraPlan = alloc.nics.find((n) => n.nicType === 'InfraNIC');
  interfaces.push({ name: infra.hostVethName, mac: infra.hostVethMac });
  const podIndex = interfaces.length;
  interfaces.push({ name: infra.ifName, mac: infra.mac, ...(infra.mtu ? { mtu: infra.mtu } : {}), sandbox: netns });
  for (const a of infraPlan?.addresses ?? []) {
    ips.push({ address: a.address, ...(a.gateway ? { gateway: a.gateway } : {}), interface: podIndex });
  }
  for (const r of infraPlan?.routes ?? []) routes.push({ dst: r.dst, ...(r.gw ? { gw: r.gw } : {}) });

  const dns = prev.dns ?? alloc.dns ?? conf.dns;
  const result: AnyResult = {
    cniVersion: conf.cniVersion,
    interfaces,
    ips,
    routes,
    ...(dns && Object.keys(dns).length > 0 ? { dns: { ...dns } } : {}),
  };
  return convertResult(result, conf.cniVersion);
}
