/**
 * The changes that take the node from the entries it has to the entries it needs: added or changed
 * entries are replaced, departed ones deleted, equal ones left alone (so a restart changes nothing that
 * is right, and nothing flaps). `diff` compares everything (after a kernel read); `diffTouched` only
 * the keys a view changed, so one node's change costs the same whatever the cluster's size.
 */
import type { Entries, RouteEntry, Touched } from './plan';

export interface Changes {
  routes: { put: RouteEntry[]; del: RouteEntry[] };
  neighbours: { put: [string, string][]; del: [string, string][] };
  fdb: { put: [string, string][]; del: [string, string][] };
}

export function diff(have: Entries, want: Entries): Changes {
  return diffTouched(have, want, {
    routes: new Set([...have.routes.keys(), ...want.routes.keys()]),
    neighbours: new Set([...have.neighbours.keys(), ...want.neighbours.keys()]),
    fdb: new Set([...have.fdb.keys(), ...want.fdb.keys()]),
  });
}

export function diffTouched(have: Entries, want: Entries, touched: Touched): Changes {
  const routes = diffKeys(have.routes, want.routes, touched.routes, sameRoute);
  return {
    routes: { put: routes.put.map(([, r]) => r), del: routes.del.map(([, r]) => r) },
    neighbours: diffKeys(have.neighbours, want.neighbours, touched.neighbours, Object.is),
    fdb: diffKeys(have.fdb, want.fdb, touched.fdb, Object.is),
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

function diffKeys<T>(have: Map<string, T>, want: Map<string, T>, keys: Set<string>, same: (h: T, w: T) => boolean) {
  const put: [string, T][] = [];
  const del: [string, T][] = [];
  for (const k of keys) {
    const w = want.get(k);
    const h = have.get(k);
    if (w !== undefined && (h === undefined || !same(h, w))) put.push([k, w]);
    else if (w === undefined && h !== undefined) del.push([k, h]);
  }
  return { put, del };
}
