import { describeFirstIssue } from '@ferry/shared-types/parse';
import type * as z from 'zod/mini';
import type { FdbBatch, IpBatch } from './batch';
import { isIpAddrList, isIpLinkList, isIpRouteList } from './checks';
import { isNetError, NetError, type NetErrorKind } from './net-error';
import type { Netns } from './netns';
import type { FdbEntry, IpAddrLink, IpLink, IpRoute, Neighbour } from './schemas';

/** An address as `ip -j addr` shows it. */
export interface LinkAddress {
  family: 4 | 6;
  local: string;
  prefixlen: number;
  scope?: string;
}

/** A line of a forced batch that failed, the kind of its failure and the kernel's reason. */
export interface FailedLine {
  index: number;
  kind: NetErrorKind;
  message: string;
}

/** A route of the main table, with its family made explicit. */
export interface LinkRoute extends IpRoute {
  family: 4 | 6;
}

/** One read of a namespace, answered with the JSON documents `ip -j -d … show` prints for it. */
export type Show =
  | { of: 'link'; dev: string }
  | { of: 'links' }
  | { of: 'addresses'; dev: string }
  /** Every table and family; with `dev`, a backend may leave out the routes through other links. */
  | { of: 'routes'; dev?: string }
  | { of: 'routes-of'; proto: number }
  | { of: 'neighbours'; dev: string }
  | { of: 'fdb'; dev: string };

/**
 * How Ip reaches the kernel, chosen once when it is made: iproute2 processes (iproute2.ts), or rtnetlink
 * (rtnl/rtnetlink.ts, the shipped shim's) handing what it does not do to iproute2. Every failure is a
 * NetError whose kind says what went wrong; `what` names the operation in its message.
 */
export interface IpBackend {
  /** Applies the lines of `batch` in order, stopping at the first that fails (NetError.failedLine); the shows' documents. */
  apply(ns: Netns, batch: IpBatch, what: string): Promise<unknown[]>;
  /** Applies every line even when some fail; the lines that failed. Throws when none could run. */
  applyEach(ns: Netns, batch: IpBatch | FdbBatch): Promise<FailedLine[]>;
  show(ns: Netns, query: Show, what: string): Promise<unknown[]>;
  /** `ip -j route get dst`'s documents. */
  routeTo(ns: Netns, dst: string): Promise<unknown[]>;
  deleteLink(ns: Netns, name: string): Promise<void>;
}

/**
 * The links, addresses and routes of a namespace. Every method takes the namespace it works in; reads
 * parse `ip -j` (by hand in the usual shapes, else with zod) and "not there" is a value (`undefined`,
 * `'absent'`, an empty list), never an exception: this is where a NetError's kind becomes one.
 */
export class Ip {
  readonly #kernel: IpBackend;

  constructor(kernel: IpBackend) {
    this.#kernel = kernel;
  }

  /**
   * Runs every line of `batch` in `ns` and returns the parsed JSON of its show lines, in order. `what`
   * names the operation in the error. Throws NetError naming the line that failed.
   */
  async apply(ns: Netns, batch: IpBatch, what: string): Promise<unknown[]> {
    return batch.ops.length === 0 ? [] : this.#kernel.apply(ns, batch, what);
  }

  /**
   * Runs every line of `batch` even when some fail (`-force`), so one peer the kernel refuses (a next
   * hop not on-link) does not hold up the others. Returns the lines that failed with their reasons.
   * Lines must be well-formed: iproute2 ends even a forced batch on a word it cannot parse.
   */
  async applyEach(ns: Netns, batch: IpBatch | FdbBatch): Promise<FailedLine[]> {
    return batch.lines.length === 0 ? [] : this.#kernel.applyEach(ns, batch);
  }

  /** The routes of the main table that carry route protocol `proto`, both families. */
  async listRoutesOf(ns: Netns, proto: number): Promise<LinkRoute[]> {
    const r = await this.#show(ns, { of: 'routes-of', proto }, 'list routes');
    return r === 'absent' ? [] : toMainRoutes(await parseRoutes(r, 'routes'));
  }

  /** The neighbour entries of `dev`, both families; none when the device is not there. */
  async listNeighbours(ns: Netns, dev: string): Promise<Neighbour[]> {
    const r = await this.#show(ns, { of: 'neighbours', dev }, `list neighbours of ${dev}`);
    return r === 'absent' ? [] : parseOne((await import('./schemas')).NeighbourListSchema, r, `neighbours of ${dev}`);
  }

  /** The forwarding entries of `dev` (`bridge fdb`); none when the device is not there. */
  async listFdb(ns: Netns, dev: string): Promise<FdbEntry[]> {
    const r = await this.#show(ns, { of: 'fdb', dev }, `list fdb of ${dev}`);
    return r === 'absent' ? [] : parseOne((await import('./schemas')).FdbListSchema, r, `fdb of ${dev}`);
  }

  /** The addresses of `dev`, or undefined when there is no such device. */
  async linkAddresses(ns: Netns, dev: string): Promise<IpAddrLink | undefined> {
    const r = await this.#show(ns, { of: 'addresses', dev }, `list addresses of ${dev}`);
    return r === 'absent' ? undefined : (await parseAddrLinks(r, `addresses of ${dev}`))[0];
  }

  /** The device and source address the kernel would use to reach `dst`; undefined when unreachable. */
  async routeTo(ns: Netns, dst: string): Promise<{ dev: string; prefsrc?: string } | undefined> {
    let docs: unknown[];
    try {
      docs = await this.#kernel.routeTo(ns, dst);
    } catch (err) {
      if (isNetError(err, 'unreachable')) return undefined;
      throw err;
    }
    const { RouteGetSchema } = await import('./schemas');
    const found = parseOne(RouteGetSchema, docs, `route to ${dst}`)[0];
    return found?.dev ? { dev: found.dev, ...(found.prefsrc ? { prefsrc: found.prefsrc } : {}) } : undefined;
  }

  /** The link called `name` in `ns`, or undefined when there is none. */
  async getLink(ns: Netns, name: string): Promise<IpLink | undefined> {
    const r = await this.#show(ns, { of: 'link', dev: name }, `look up link ${name}`);
    return r === 'absent' ? undefined : (await parseLinks(r, `link ${name}`))[0];
  }

  /** Every link in `ns`. */
  async listLinks(ns: Netns): Promise<IpLink[]> {
    return parseLinks(await this.#kernel.show(ns, { of: 'links' }, 'list links'), 'links');
  }

  /**
   * Every link in `ns`, or undefined when there is no namespace at its path (a pod's, after its death: the
   * path gone, or left behind unmounted). DEL then has nothing to tear down in it.
   */
  async linksIfPresent(ns: Netns): Promise<IpLink[] | undefined> {
    try {
      return await this.listLinks(ns);
    } catch (err) {
      if (isNetError(err, 'no-netns')) return undefined;
      throw err;
    }
  }

  /** The routes of the main table, both families; with `dev`, only those through that link. */
  async listRoutes(ns: Netns, dev?: string): Promise<LinkRoute[]> {
    const r = await this.#show(ns, { of: 'routes', ...(dev === undefined ? {} : { dev }) }, 'list routes');
    if (r === 'absent') return [];
    const routes = toMainRoutes(await parseRoutes(r, 'routes'));
    return dev === undefined ? routes : routes.filter((route) => route.dev === dev);
  }

  /** Deletes link `name` (a veth takes its peer along). */
  async deleteLink(ns: Netns, name: string): Promise<'deleted' | 'absent'> {
    try {
      await this.#kernel.deleteLink(ns, name);
      return 'deleted';
    } catch (err) {
      if (isNetError(err, 'no-device')) return 'absent';
      throw err;
    }
  }

  /** The documents of `query`, or 'absent' when the device it names is not there. */
  async #show(ns: Netns, query: Show, what: string): Promise<unknown[] | 'absent'> {
    try {
      return await this.#kernel.show(ns, query, what);
    } catch (err) {
      if (isNetError(err, 'no-device')) return 'absent';
      throw err;
    }
  }
}

/** The same MAC whatever the case. */
export function sameMac(a: string | undefined, b: string | undefined): boolean {
  return a !== undefined && b !== undefined && a.toLowerCase() === b.toLowerCase();
}

/** `ip -j -batch` prints one JSON array per show line, each on its own line. */
export function parseJsonLines(stdout: string): unknown[] {
  const out: unknown[] = [];
  for (const line of stdout.split('\n')) {
    const t = line.trim();
    if (t) out.push(JSON.parse(t));
  }
  return out;
}

/**
 * The first JSON document of a show (from `ip -j` or the netlink layer): taken as it is when the check
 * generated from its schema (checks.js, scripts/checks) accepts it, else parsed by the schema in
 * '@ferry/net/schemas', so zod is loaded only then: building schemas cost the shim's every command a
 * millisecond.
 */
export async function parseLinks(docs: unknown[], what: string): Promise<IpLink[]> {
  const doc = docs[0] ?? [];
  return isIpLinkList(doc) ? doc : parseOne((await import('./schemas')).IpLinkListSchema, docs, what);
}

export async function parseAddrLinks(docs: unknown[], what: string): Promise<IpAddrLink[]> {
  const doc = docs[0] ?? [];
  return isIpAddrList(doc) ? doc : parseOne((await import('./schemas')).IpAddrListSchema, docs, what);
}

export async function parseRoutes(docs: unknown[], what: string): Promise<IpRoute[]> {
  const doc = docs[0] ?? [];
  return isIpRouteList(doc) ? doc : parseOne((await import('./schemas')).IpRouteListSchema, docs, what);
}

/** Parses the first JSON document of a show with `schema`; a mismatch is a 'bad-output' NetError naming `what`. */
export function parseOne<T>(schema: z.ZodMiniType<T>, docs: unknown[], what: string): T {
  const r = schema.safeParse(docs[0] ?? []);
  if (r.success) return r.data;
  throw new NetError('bad-output', `parse ip output for ${what}`, describeFirstIssue(r.error));
}

/** The addresses of one `ip -j addr` link entry. */
export function toAddresses(link: IpAddrLink | undefined): LinkAddress[] {
  return (link?.addr_info ?? []).map((a) => ({
    family: a.family === 'inet6' ? 6 : 4,
    local: a.local,
    prefixlen: a.prefixlen,
    ...(a.scope ? { scope: a.scope } : {}),
  }));
}

/**
 * `route show table all` mixes families and tables; keep the main table and tell the families apart.
 * IPv6 routes are the ones whose dst or gateway contains a colon, or that carry `pref` (the kernel
 * prints a router preference only for IPv6). dst is made a CIDR: ip prints `default` for /0 and a bare
 * address for a host route.
 */
export function toMainRoutes(routes: IpRoute[]): LinkRoute[] {
  return routes
    .filter((r) => r.table === undefined || r.table === 'main')
    .filter((r) => r.type === undefined || r.type === 'unicast')
    .map((r) => {
      const family = r.dst.includes(':') || r.gateway?.includes(':') || r.pref !== undefined ? 6 : 4;
      const dst =
        r.dst === 'default'
          ? family === 6
            ? '::/0'
            : '0.0.0.0/0'
          : r.dst.includes('/')
            ? r.dst
            : `${r.dst}/${family === 6 ? 128 : 32}`;
      return { ...r, dst, family };
    });
}
