/**
 * Cleaning a pod's netns with no state at all (ferryd is down): every delegated device goes home, the
 * InfraNIC veth is deleted. Delegated devices are recognised by the marker ADD put on them (their alias
 * names the host device) or, if the pod overwrote it, by being neither a veth nor loopback. A device
 * whose host name is unknown or taken travels home under `frt<mac>`; ferryd renames it by MAC later.
 * Best effort by design: the queue entry is already durable, and a device left behind returns to the
 * node when the netns dies, where ferryd's reconciler finds it.
 */
import { IpBatch, type IpLink, netnsAt, SELF } from '@ferry/net';
import type { Deps } from '../deps';
import { hostNameFromMarker, listOrNone, moveHome, travelNameOf } from '../nic/delegated';

export async function cleanPodNetns(netns: string, ifName: string, d: Deps): Promise<void> {
  if (!netns) return;
  const links = await listOrNone(netnsAt(netns), d);
  if (!links) {
    d.log.info({ netns }, 'pod netns already gone: nothing to clean');
    return;
  }
  const nodeNames = new Set((await d.ip.listLinks(SELF)).map((l) => l.ifname));
  for (const l of links) {
    const kind = l.linkinfo?.info_kind;
    if (l.ifname === 'lo' || l.link_type === 'loopback') continue;
    const marked = hostNameFromMarker(l.ifalias);
    if (kind === 'veth' && !marked) {
      if (l.ifname === ifName) await deleteInfraVeth(netns, l, d);
      continue;
    }
    if (!l.address) continue;
    const home = marked && !nodeNames.has(marked) ? marked : travelNameOf(l.address);
    try {
      await moveHome(l, links, { mac: l.address, hostIfName: home, netns, restoreAlias: '' }, d);
      nodeNames.add(home);
    } catch (err) {
      d.log.warn(
        { err, mac: l.address, ifName: l.ifname },
        'could not return a device without ferryd; the reconciler will',
      );
    }
  }
}

async function deleteInfraVeth(netns: string, l: IpLink, d: Deps): Promise<void> {
  try {
    await d.ip.apply(netnsAt(netns), new IpBatch().deleteLink(l.ifname), `delete ${l.ifname}`);
    d.log.info({ ifName: l.ifname }, 'InfraNIC veth deleted without ferryd');
  } catch (err) {
    d.log.warn({ err, ifName: l.ifname }, 'could not delete the InfraNIC veth');
  }
}
