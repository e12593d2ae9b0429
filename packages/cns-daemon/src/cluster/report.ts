/**
 * What `ferryctl nodes` and doctor show: every peer's planned entries compared with what the kernel
 * holds now, and Ferry's entries that no peer accounts for.
 */
import type { ClusterEntry, NodesReport } from '@ferry/shared-types/api/cluster';
import type { ClusterController } from './controller';
import { sameRoute } from './diff';
import { FERRY_ROUTE_PROTO } from './kernel';
import { type Entries, emptyEntries, vtepMac } from './plan';

export async function nodesReport(c: ClusterController): Promise<NodesReport> {
  const live = c.config.routing === 'none' ? emptyEntries() : await c.readKernel();
  const planned = c.planner?.entries ?? emptyEntries();
  const ownerOf = c.planner?.ownerOf ?? new Map<string, string>();
  const refused = new Map(c.refused.map((r) => [`${r.kind}\t${r.key}`, r.reason]));
  const byPeer = new Map<string, ClusterEntry[]>();
  const add = (peer: string | undefined, e: ClusterEntry) => {
    if (peer === undefined) return;
    const list = byPeer.get(peer) ?? [];
    list.push(e);
    byPeer.set(peer, list);
  };
  const stateOf = (kind: ClusterEntry['kind'], key: string, present: boolean, same: boolean) => {
    const reason = refused.get(`${kind}\t${key}`);
    if (reason !== undefined && !(present && same)) return { state: 'refused' as const, reason };
    return { state: !present ? ('missing' as const) : same ? ('present' as const) : ('wrong' as const) };
  };
  for (const [dst, want] of planned.routes) {
    const have = live.routes.get(dst);
    add(ownerOf.get(dst), {
      kind: 'route',
      key: dst,
      value: want.via,
      ...stateOf('route', dst, have !== undefined, have !== undefined && sameRoute(have, want)),
    });
  }
  for (const [addr, mac] of planned.neighbours) {
    add(ownerOf.get(addr), {
      kind: 'neighbour',
      key: addr,
      value: mac,
      ...stateOf('neighbour', addr, live.neighbours.has(addr), live.neighbours.get(addr) === mac),
    });
  }
  for (const [mac, dst] of planned.fdb) {
    add(ownerOf.get(mac), {
      kind: 'fdb',
      key: mac,
      value: dst,
      ...stateOf('fdb', mac, live.fdb.has(mac), live.fdb.get(mac) === dst),
    });
  }
  for (const u of c.planner?.unroutable ?? []) {
    add(u.peer, { kind: 'route', key: u.cidr ?? '*', state: 'unroutable', reason: u.reason });
  }
  const status = c.source.status();
  const local = c.local;
  return {
    ...(c.config.nodeName ? { nodeName: c.config.nodeName } : {}),
    routing: c.config.routing,
    routeProtocol: FERRY_ROUTE_PROTO,
    source: { ...status },
    sync: { ...c.stats },
    ...(c.device
      ? {
          vxlan: {
            device: c.device,
            mac: vtepMac(c.config.nodeName ?? ''),
            ...(local ? { local: local.address } : {}),
            vni: c.config.vxlan.vni,
            port: c.config.vxlan.port,
          },
        }
      : {}),
    ...(c.egress ? { egress: c.egress } : {}),
    peers: c.peers.map((p) => {
      const entries = byPeer.get(p.name) ?? [];
      return {
        name: p.name,
        addresses: [...p.addresses],
        podCIDRs: [...p.podCIDRs],
        state: entries.every((e) => e.state === 'present') ? ('ok' as const) : ('degraded' as const),
        entries,
      };
    }),
    stale: staleEntries(live, planned),
  };
}

function staleEntries(live: Entries, planned: Entries): ClusterEntry[] {
  const out: ClusterEntry[] = [];
  for (const [dst, r] of live.routes) {
    if (!planned.routes.has(dst)) out.push({ kind: 'route', key: dst, value: r.via, state: 'present' });
  }
  for (const [addr, mac] of live.neighbours) {
    if (!planned.neighbours.has(addr)) out.push({ kind: 'neighbour', key: addr, value: mac, state: 'present' });
  }
  for (const [mac, dst] of live.fdb) {
    if (!planned.fdb.has(mac)) out.push({ kind: 'fdb', key: mac, value: dst, state: 'present' });
  }
  return out;
}
