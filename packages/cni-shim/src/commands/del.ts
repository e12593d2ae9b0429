/**
 * DEL: get state → tear down each NIC → release. Idempotent: no state, an empty or vanished CNI_NETNS,
 * a second DEL all end in exit 0. The InfraNIC is torn down from the node side (its host veth), so a
 * vanished netns never stops the release. A delegated device whose host name is taken fails the DEL
 * before anything is released, so the retried DEL still knows where the device is.
 */
import type { ShimConf } from '../config';
import type { Deps } from '../deps';
import type { CmdArgs } from '../env';
import { teardownDelegatedNic } from '../nic/delegated';
import { teardownInfraNic } from '../nic/infra';

export async function cmdDel(args: CmdArgs, conf: ShimConf, d: Deps): Promise<undefined> {
  const ep = await d.daemon.getEndpoint(args.containerId);
  const mine = (ep?.interfaces ?? []).filter((i) => i.network === conf.name && i.attachmentIfName === args.ifName);
  // Delegated devices first: they need the pod netns, which the InfraNIC's veth does not.
  for (const nic of mine) if (nic.nicType === 'DelegatedNIC') await teardownDelegatedNic(nic, args.netns, d);
  for (const nic of mine) if (nic.nicType === 'InfraNIC') await teardownInfraNic(nic, d);
  const released = await d.daemon.release(args.containerId, conf.name, args.ifName);
  d.log.info({ interfaces: released.released.length, hadState: mine.length > 0 }, 'deleted');
  return undefined;
}
