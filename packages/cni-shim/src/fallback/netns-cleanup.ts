/**
 * Cleaning a pod's netns with no state at all (ferryd is down): this attachment's delegated devices go
 * home, its InfraNIC veth is deleted. Without a record, only what is surely Ferry's is touched: a device
 * whose alias marker names this attachment, or one whose alias the pod overwrote but which is still in
 * Ferry's link group (and, when the runtime passed prevResult, is one of its interfaces). Other plugins' devices, the workload's own (tunnels, macvlans) and another
 * attachment's stay where they are. A device whose host name is unknown or taken travels home
 * under `frt<mac>`; ferryd renames it by MAC later. Best effort by design: the queue entry is already
 * durable, and a physical device left behind returns to the node when the netns dies, where ferryd's
 * reconciler finds it.
 */
import { type IpLink, netnsAt, SELF } from '@ferry/net';
import { parseMarker } from '@ferry/shared-types/link-marker';
import type { Deps } from '../deps';
import { AS_FOUND_ON_NODE, inDelegatedGroup, moveDeviceOut, travelNameOf } from '../nic/delegated';

/**
 * What the daemon-down DEL of attachment `ifName` does with link `l` of the pod. `ownMacs`: the MACs the
 * attachment's result (prevResult) lists in this pod, when the runtime passed it: a device whose alias
 * the app overwrote names no attachment, and goes home only if it is one of them (another attachment's,
 * a secondary network's say, stays for that attachment's DEL).
 */
export function stateless(
  l: IpLink,
  ifName: string,
  ownMacs?: ReadonlySet<string>,
): 'delete-veth' | 'send-home' | 'leave' {
  if (l.ifname === 'lo' || l.link_type === 'loopback') return 'leave';
  const marker = parseMarker(l.ifalias);
  if (marker) return marker.attachmentIfName === ifName && l.address ? 'send-home' : 'leave';
  // Ferry's group says delegated device whatever its kind; only then may a veth be this InfraNIC.
  if (inDelegatedGroup(l)) return l.address && isOwn(l, ownMacs) ? 'send-home' : 'leave';
  return l.linkinfo?.info_kind === 'veth' && l.ifname === ifName ? 'delete-veth' : 'leave';
}

const isOwn = (l: IpLink, ownMacs: ReadonlySet<string> | undefined) =>
  !ownMacs || [l.address, l.permaddr].some((m) => m !== undefined && ownMacs.has(m.toLowerCase()));

export async function cleanPodNetns(
  netns: string,
  ifName: string,
  deps: Deps,
  ownMacs?: ReadonlySet<string>,
): Promise<void> {
  if (!netns) return;
  const links = await deps.ip.linksIfPresent(netnsAt(netns));
  if (!links) {
    deps.log.info({ netns }, 'pod netns already gone: nothing to clean');
    return;
  }
  // The node's names matter only when a device goes home, which a pod with just its InfraNIC never has.
  let nodeNames: Set<string> | undefined;
  for (const l of links) {
    const what = stateless(l, ifName, ownMacs);
    if (what === 'delete-veth') await deleteInfraVeth(netns, l, deps);
    if (what !== 'send-home' || !l.address) continue;
    nodeNames ??= new Set((await deps.ip.listLinks(SELF)).map((n) => n.ifname));
    const marked = parseMarker(l.ifalias)?.hostIfName;
    const home = marked && !nodeNames.has(marked) ? marked : travelNameOf(l.address);
    try {
      await moveDeviceOut(l, links, { mac: l.address, hostIfName: home, netns, restore: AS_FOUND_ON_NODE }, deps);
      nodeNames.add(home);
    } catch (err) {
      deps.log.warn(
        { err, mac: l.address, ifName: l.ifname },
        'could not return a device without ferryd; the reconciler will',
      );
    }
  }
}

async function deleteInfraVeth(netns: string, l: IpLink, deps: Deps): Promise<void> {
  try {
    const r = await deps.ip.deleteLink(netnsAt(netns), l.ifname);
    deps.log.info({ ifName: l.ifname, result: r }, 'InfraNIC veth deleted without ferryd');
  } catch (err) {
    deps.log.warn({ err, ifName: l.ifname }, 'could not delete the InfraNIC veth');
  }
}
