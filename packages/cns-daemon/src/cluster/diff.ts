/**
 * The changes that take the node from the entries it has to the entries it needs: added or changed
 * entries are replaced, departed ones deleted, equal ones left alone (so a restart changes nothing that
 * is right, and nothing flaps). Linear in the entries, with no kernel reads.
 */
import type { Entries, RouteEntry } from './plan';

export interface Changes {
  routes: { put: RouteEntry[]; del: RouteEntry[] };
  neighbours: { put: [string, string][]; del: [string, string][] };
  fdb: { put: [string, string][]; del: [string, string][] };
}

export function diff(have: Entries, want: Entries): Changes {
  return {
    routes: diffMap(have.routes, want.routes, sameRoute),
    neighbours: diffPairs(have.neighbours, want.neighbours),
    fdb: diffPairs(have.fdb, want.fdb),
  };
}

export function changeCount(c: Changes): number {
  return (
    c.routes.put.length +
    c.routes.del.length +
    c.neighbours.put.length +
    c.neighbours.del.length +
    c.fdb.put.length +
    c.fdb.del.length
  );
}

/** A wanted route without a device matches whatever device the kernel chose for its next hop. */
export function sameRoute(have: RouteEntry, want: RouteEntry): boolean {
  return have.via === want.via && have.onlink === want.onlink && (want.dev === undefined || have.dev === want.dev);
}

function diffMap<T>(have: Map<string, T>, want: Map<string, T>, same: (h: T, w: T) => boolean) {
  const put: T[] = [];
  const del: T[] = [];
  for (const [k, w] of want) {
    const h = have.get(k);
    if (h === undefined || !same(h, w)) put.push(w);
  }
  for (const [k, h] of have) if (!want.has(k)) del.push(h);
  return { put, del };
}

function diffPairs(have: Map<string, string>, want: Map<string, string>) {
  const put: [string, string][] = [];
  const del: [string, string][] = [];
  for (const [k, w] of want) if (have.get(k) !== w) put.push([k, w]);
  for (const [k, h] of have) if (!want.has(k)) del.push([k, h]);
  return { put, del };
}
