/**
 * `ferryd --uninstall`: takes away what cluster networking put on the node — every route carrying
 * Ferry's route protocol and the VXLAN device (its neighbour and FDB entries go with it). Idempotent:
 * a second run finds nothing and says so.
 */
import { type Ip, IpBatch, type Netns } from '@ferry/net';
import type { ClusterConfig } from '@ferry/shared-types/config/ferryd';
import { FERRY_ROUTE_PROTO } from './kernel';

export interface UninstallReport {
  routes: number;
  device: 'deleted' | 'absent';
}

export async function uninstallCluster(
  ip: Ip,
  ns: Netns,
  cluster: ClusterConfig | undefined,
): Promise<UninstallReport> {
  const routes = await ip.listRoutesOf(ns, FERRY_ROUTE_PROTO);
  const batch = new IpBatch();
  for (const r of routes) batch.deleteRoute(r.dst, FERRY_ROUTE_PROTO);
  await ip.apply(ns, batch, 'delete Ferry routes');
  const device = await ip.deleteLink(ns, cluster?.vxlan.device ?? 'ferry.1');
  return { routes: routes.length, device };
}
