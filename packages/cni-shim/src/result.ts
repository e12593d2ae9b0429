/**
 * The ADD result: for the InfraNIC the host veth and the pod interface (as ptp reports both), then each
 * DelegatedNIC as it is named in the pod; each address with the index of its pod interface; the pods'
 * routes and DNS; appended to a chained prevResult; printed in the config's cniVersion.
 */
import type { Allocation, DelegatedNicPlan, NicPlan, UserspaceNicPlan } from '@ferry/shared-types/api/allocations';
import type { BuiltNic, HeldUserspaceNic } from '@ferry/shared-types/api/endpoints';
import { isAnyResult } from '@ferry/shared-types/checks';
import type { AnyResult } from '@ferry/shared-types/cni/any-result';
import { convertResult } from '@ferry/shared-types/cni/convert';
import { Code } from '@ferry/shared-types/errors';
import { parseAs } from '@ferry/shared-types/parse';
import type { ShimConf } from './config';
import type { BuiltInfraNic } from './nic/infra';

/** One NIC of the plan and what the shim built for it (nothing, for a userspace device: it is held). */
export type BuiltPair =
  | { plan: Extract<NicPlan, { nicType: 'InfraNIC' }>; built: BuiltInfraNic }
  | { plan: DelegatedNicPlan; built: BuiltNic }
  | { plan: UserspaceNicPlan; built: HeldUserspaceNic };

/**
 * The config's prevResult, validated (empty when there is none): by the check generated from
 * AnyResultSchema in the usual case, else by the schema, which is loaded only then (building it costs
 * ~1 ms) and words the error.
 */
export async function prevResultOf(conf: ShimConf): Promise<AnyResult> {
  if (!conf.prevResult) return {};
  if (isAnyResult(conf.prevResult)) return conf.prevResult;
  const { AnyResultSchema } = await import('@ferry/shared-types/cni/any-result');
  return parseAs(AnyResultSchema, conf.prevResult, Code.InvalidConfig, 'invalid network config: prevResult');
}

export function toResult(
  conf: ShimConf,
  prev: AnyResult,
  netns: string,
  alloc: Allocation,
  nics: readonly BuiltPair[],
): AnyResult {
  const interfaces = [...(prev.interfaces ?? [])];
  const ips = [...(prev.ips ?? [])];
  const routes = [...(prev.routes ?? [])];

  for (const { plan, built } of nics) {
    if ('userspace' in plan) {
      // No netdev, so no MAC and no addresses: the name and the PCI address, as sriov-cni reports a
      // DPDK-mode VF (the spec makes mac optional).
      interfaces.push({ name: plan.ifName, sandbox: netns, pciID: plan.pciAddress });
      continue;
    }
    if (plan.nicType === 'InfraNIC') interfaces.push({ name: plan.hostVethName, mac: plan.hostVethMac });
    const podIndex = interfaces.length;
    const mtu = 'mtu' in built ? built.mtu : undefined;
    const mac = 'mac' in built ? built.mac : undefined;
    // pciID (1.0.0 on; convertResult drops it below): the device's PCI address, as sriov-cni reports it.
    const pciID = plan.nicType === 'DelegatedNIC' ? plan.pciAddress : undefined;
    interfaces.push({
      name: built.ifName,
      ...(mac ? { mac } : {}),
      ...(mtu ? { mtu } : {}),
      sandbox: netns,
      ...(pciID ? { pciID } : {}),
    });
    for (const a of plan.addresses) {
      ips.push({ address: a.address, ...(a.gateway ? { gateway: a.gateway } : {}), interface: podIndex });
    }
    for (const r of plan.routes) routes.push({ dst: r.dst, ...(r.gw ? { gw: r.gw } : {}) });
  }

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
