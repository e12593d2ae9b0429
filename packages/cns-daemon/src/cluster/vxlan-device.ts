/**
 * The node's one VXLAN device: created when missing, re-created when its VNI, port, local end or MAC
 * differ from the config (rare: a config change), left alone when right. Its addresses are the node's
 * VTEP addresses, one per family.
 */

import type { VxlanSpec } from '@ferry/net';
import { type Ip, IpBatch, type IpLink, type Netns, sameMac } from '@ferry/net';

export type DeviceOutcome = 'created' | 'kept' | 'recreated';

export async function ensureVxlanDevice(
  ip: Ip,
  ns: Netns,
  spec: VxlanSpec,
  addresses: readonly string[],
): Promise<DeviceOutcome> {
  const link = await ip.getLink(ns, spec.name);
  let outcome: DeviceOutcome = 'kept';
  if (!link || !matches(link, spec)) {
    if (link) await ip.deleteLink(ns, spec.name);
    await ip.apply(
      ns,
      new IpBatch().addVxlan(spec).setAddrGenMode(spec.name, 'none').setUp(spec.name),
      `create ${spec.name}`,
    );
    outcome = link ? 'recreated' : 'created';
  } else if (!link.flags?.includes('UP')) {
    await ip.apply(ns, new IpBatch().setUp(spec.name), `set ${spec.name} up`);
  }
  const have = (await ip.linkAddresses(ns, spec.name))?.addr_info.filter((a) => a.scope !== 'link') ?? [];
  const haveText = new Set(have.map((a) => `${a.local}/${a.prefixlen}`));
  const batch = new IpBatch();
  for (const a of addresses) if (!haveText.has(a)) batch.replaceAddress(spec.name, a, { nodad: a.includes(':') });
  for (const a of haveText) if (!addresses.includes(a)) batch.deleteAddress(spec.name, a);
  await ip.apply(ns, batch, `address ${spec.name}`);
  return outcome;
}

function matches(link: IpLink, spec: VxlanSpec): boolean {
  const info = link.linkinfo?.info_data;
  return (
    link.linkinfo?.info_kind === 'vxlan' &&
    info?.id === spec.vni &&
    info.port === spec.port &&
    info.learning === false &&
    (spec.local === undefined || (info.local ?? info.local6) === spec.local) &&
    sameMac(link.address, spec.mac) &&
    (spec.mtu === undefined || link.mtu === spec.mtu)
  );
}
