/**
 * `ferryd --uninstall`: takes away what cluster networking put on the node — every route carrying
 * Ferry's route protocol, the VXLAN device (its neighbour and FDB entries go with it) and the
 * masquerade table or chain. Idempotent: a second run finds nothing and says so.
 */
import { type Ip, IpBatch, type Runner, SELF } from '@ferry/net';
import type { ClusterConfig } from '@ferry/shared-types/config/ferryd';
import { removeMasqueradeIfAny } from './egress';
import { FERRY_ROUTE_PROTO } from './kernel';

export interface UninstallReport {
  routes: number;
  device: 'deleted' | 'absent';
  masquerade: 'removed' | 'absent';
}

export async function uninstallCluster(
  ip: Ip,
  run: Runner,
  cluster: ClusterConfig | undefined,
): Promise<UninstallReport> {
  const ns = SELF;
  const routes = await ip.listRoutesOf(ns, FERRY_ROUTE_PROTO);
  const batch = new IpBatch();
  for (const r of routes) batch.deleteRoute(r.dst, FERRY_ROUTE_PROTO);
  await ip.apply(ns, batch, 'delete Ferry routes');
  const device = await ip.deleteLink(ns, cluster?.vxlan.device ?? 'ferry.1');
  const masquerade = await removeMasqueradeIfAny(run);
  return { routes: routes.length, device, masquerade };
}
