/**
 * Ferry's entries as the kernel holds them, read and changed through @ferry/net: routes by Ferry's
 * route protocol number, neighbour and FDB entries of Ferry's own VXLAN device. Changes run in two
 * forced batches (one `bridge`, one `ip`), so one entry the kernel refuses does not hold up the rest.
 */
import { FdbBatch, type Ip, IpBatch, type Netns } from '@ferry/net';
import type { Changes } from './diff';
import { type Entries, emptyEntries } from './plan';

/**
 * Ferry's route protocol number (`proto 117` in `ip route`; 117 is not in iproute2's rt_protos). Every
 * route ferryd programs carries it, and ferryd lists, diffs and deletes only routes that carry it.
 */
export const FERRY_ROUTE_PROTO = 117;

export async function readEntries(ip: Ip, ns: Netns, device: string | undefined): Promise<Entries> {
  const out = emptyEntries();
  for (const r of await ip.listRoutesOf(ns, FERRY_ROUTE_PROTO)) {
    if (!r.gateway) continue;
    out.routes.set(r.dst, {
      dst: r.dst,
      via: r.gateway,
      ...(r.dev ? { dev: r.dev } : {}),
      onlink: r.flags?.includes('onlink') ?? false,
    });
  }
  if (device) {
    for (const n of await ip.listNeighbours(ns, device)) {
      if (n.lladdr && n.state?.includes('PERMANENT')) out.neighbours.set(n.dst, n.lladdr.toLowerCase());
    }
    for (const f of await ip.listFdb(ns, device)) if (f.dst) out.fdb.set(f.mac.toLowerCase(), f.dst);
  }
  return out;
}

/** A change the kernel refused, keyed as Entries are (route dst, neighbour address, FDB MAC). */
export interface Refused {
  kind: 'route' | 'neighbour' | 'fdb';
  key: string;
  reason: string;
}

/**
 * Applies `changes` in the order that never leaves a route without its neighbour and FDB entries:
 * FDB and neighbour entries first, then routes; deletions of routes before their entries go. Updates
 * `have` to what the kernel now holds and returns what it refused.
 */
export async function applyChanges(
  ip: Ip,
  ns: Netns,
  device: string | undefined,
  changes: Changes,
  have: Entries,
): Promise<Refused[]> {
  const refused: Refused[] = [];
  const fdbPut = new FdbBatch();
  if (device) for (const [mac, dst] of changes.fdb.put) fdbPut.replace(mac, device, dst);
  refused.push(
    ...(await run(
      ip,
      ns,
      fdbPut,
      changes.fdb.put.map(([mac]) => ({ kind: 'fdb' as const, key: mac })),
    )),
  );

  const batch = new IpBatch();
  const keys: Key[] = [];
  if (device) {
    for (const [addr, mac] of changes.neighbours.put) {
      batch.replaceNeigh(addr, mac, device);
      keys.push({ kind: 'neighbour', key: addr });
    }
  }
  for (const r of changes.routes.put) {
    // Replace only a route known to be Ferry's; a new one is added, so it never displaces another owner's.
    if (have.routes.has(r.dst)) batch.replaceRoute({ ...r, proto: FERRY_ROUTE_PROTO });
    else batch.addOwnedRoute({ ...r, proto: FERRY_ROUTE_PROTO });
    keys.push({ kind: 'route', key: r.dst });
  }
  for (const r of changes.routes.del) {
    batch.deleteRoute(r.dst, FERRY_ROUTE_PROTO);
    keys.push({ kind: 'route', key: r.dst, del: true });
  }
  if (device) {
    for (const [addr] of changes.neighbours.del) {
      batch.deleteNeigh(addr, device);
      keys.push({ kind: 'neighbour', key: addr, del: true });
    }
  }
  refused.push(...(await run(ip, ns, batch, keys)));

  const fdbDel = new FdbBatch();
  if (device) for (const [mac, dst] of changes.fdb.del) fdbDel.delete(mac, device, dst);
  refused.push(
    ...(await run(
      ip,
      ns,
      fdbDel,
      changes.fdb.del.map(([mac]) => ({ kind: 'fdb' as const, key: mac, del: true })),
    )),
  );

  const failed = new Set(refused.map((r) => `${r.kind}\t${r.key}`));
  const ok = (kind: Refused['kind'], key: string) => !failed.has(`${kind}\t${key}`);
  for (const r of changes.routes.put) if (ok('route', r.dst)) have.routes.set(r.dst, r);
  for (const r of changes.routes.del) if (ok('route', r.dst)) have.routes.delete(r.dst);
  for (const [k, v] of changes.neighbours.put) if (ok('neighbour', k)) have.neighbours.set(k, v);
  for (const [k] of changes.neighbours.del) if (ok('neighbour', k)) have.neighbours.delete(k);
  for (const [k, v] of changes.fdb.put) if (ok('fdb', k)) have.fdb.set(k, v);
  for (const [k] of changes.fdb.del) if (ok('fdb', k)) have.fdb.delete(k);
  return refused;
}

interface Key {
  kind: Refused['kind'];
  key: string;
  /** A deletion: an entry already gone counts as deleted. */
  del?: boolean;
}

async function run(ip: Ip, ns: Netns, batch: IpBatch | FdbBatch, keys: Key[]): Promise<Refused[]> {
  const failed = await ip.applyEach(ns, batch);
  return failed.flatMap((f) => {
    const k = keys[f.index];
    // A deletion of an entry (or of its device) that is not there is done.
    if (!k || (k.del && (f.kind === 'not-found' || f.kind === 'no-device'))) return [];
    const taken = !k.del && k.kind === 'route' && f.kind === 'exists';
    const reason = taken ? `another owner's route to this prefix is in the way (${f.message})` : f.message;
    return [{ kind: k.kind, key: k.key, reason }];
  });
}
