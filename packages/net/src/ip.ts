import { CniError, Code } from '@ferry/shared-types/errors';
import { describeFirstIssue } from '@ferry/shared-types/parse';
import type * as z from 'zod/mini';
import { type BatchLine, type FdbBatch, IpBatch, quoteBatchWord } from './batch';
import { isIpAddrList, isIpLinkList, isIpRouteList } from './checks';
import { describeNetns, ipArgv, type Netns } from './netns';
import { isNoDevice, isNoNetns, NetError, type Runner, type RunResult } from './run';
import type { FdbEntry, IpAddrLink, IpLink, IpRoute, Neighbour } from './schemas';

/** An address as `ip -j addr` shows it. */
export interface LinkAddress {
  family: 4 | 6;
  local: string;
  prefixlen: number;
  scope?: string;
}

/** A line of a forced batch that failed, and the kernel's reason. */
export interface FailedLine {
  index: number;
  message: string;
}

/** A route of the main table, with its family made explicit. */
export interface LinkRoute extends IpRoute {
  family: 4 | 6;
}

/**
 * Applies a batch and deletes links without iproute2 (rtnetlink in the shipped shim). A batch it does
 * not support runs through iproute2; its errors are NetErrors worded as iproute2's.
 */
export interface LinkApplier {
  supports(batch: IpBatch): boolean;
  apply(ns: Netns, batch: IpBatch, what: string): unknown[];
  /** `ip -j -d route show table all` of `ns`; with `dev`, its routes only ('absent': no such link). */
  routes(ns: Netns, dev?: string): unknown[] | 'absent';
  deleteLink(ns: Netns, name: string): 'deleted' | 'absent';
}

/**
 * iproute2 through a Runner, or rtnetlink through a LinkApplier where the runtime has one. Every method
 * takes the namespace it works in; reads parse `ip -j` (by hand in the usual shapes, else with zod)
 * and "not there" is a value (`undefined`, `'absent'`), never an exception.
 */
export class Ip {
  readonly #run: Runner;
  readonly #links: LinkApplier | undefined;

  constructor(run: Runner, links?: LinkApplier) {
    this.#run = run;
    this.#links = links;
  }

  /**
   * Runs every line of `batch` in `ns` in one process and returns the parsed JSON of its show lines, in
   * order. `what` names the operation in the error. Throws NetError naming the line that failed.
   */
  async apply(ns: Netns, batch: IpBatch, what: string): Promise<unknown[]> {
    if (batch.ops.length === 0) return [];
    if (this.#links?.supports(batch)) return this.#links.apply(ns, batch, what);
    const lines = batch.lines;
    const hasJson = lines.some((l) => l.json);
    const quoted = lines.map((l) => l.args.map(quoteBatchWord));
    if (quoted.some((words) => words.some((w) => w === undefined))) return this.#applyOneByOne(ns, lines, what);
    const global = hasJson ? ['-j', '-d'] : [];
    const argv = ipArgv(ns, [...global, '-batch', '-']);
    const input = `${quoted.map((words) => words.join(' ')).join('\n')}\n`;
    const r = await this.#run(argv, input);
    if (r.exitCode !== 0) {
      const failed = /Command failed -:(\d+)/.exec(r.stderr);
      const index = failed ? Number(failed[1]) - 1 : undefined;
      const line = index === undefined ? undefined : lines[index];
      const where = line ? ` (ip ${line.args.join(' ')})` : '';
      throw new NetError(`${what} in ${describeNetns(ns)}${where}`, r, argv, index);
    }
    return hasJson ? parseJsonLines(r.stdout) : [];
  }

  /**
   * Runs every line of `batch` even when some fail (`-force`), so one peer the kernel refuses (a next
   * hop not on-link) does not hold up the others. Returns the lines that failed with their reasons.
   * Lines must be well-formed: iproute2 ends even a forced batch on a word it cannot parse.
   */
  async applyEach(ns: Netns, batch: IpBatch | FdbBatch): Promise<FailedLine[]> {
    if (batch.lines.length === 0) return [];
    const quoted = batch.lines.map((l) => l.args.map(quoteBatchWord));
    const bad = quoted.findIndex((words) => words.some((w) => w === undefined));
    if (bad >= 0)
      throw new CniError(Code.Internal, `${batch.tool} -batch: line ${bad + 1} cannot be quoted for a batch`);
    const argv = ipArgv(ns, ['-force', '-batch', '-'], batch.tool);
    const r = await this.#run(argv, `${quoted.map((words) => words.join(' ')).join('\n')}\n`);
    if (r.exitCode === 0) return [];
    const failed: FailedLine[] = [];
    let reasons: string[] = [];
    for (const line of r.stderr.split('\n')) {
      const m = /^Command failed -:(\d+)/.exec(line);
      if (m) {
        failed.push({ index: Number(m[1]) - 1, message: reasons.join('; ') || 'failed' });
        reasons = [];
      } else if (line.trim()) reasons.push(line.trim().replace(/^Error: /, ''));
    }
    // Nothing attributable to a line: the process itself failed (no such netns, a parse error).
    if (failed.length === 0) throw new NetError(`${batch.tool} -batch in ${describeNetns(ns)}`, r, argv);
    return failed;
  }

  /** The routes of the main table that carry route protocol `proto`, both families. */
  async listRoutesOf(ns: Netns, proto: number): Promise<LinkRoute[]> {
    const r = await this.#show(ns, ['route', 'show', 'table', 'all', 'proto', String(proto)], 'list routes');
    return r === 'absent' ? [] : toMainRoutes(await parseRoutes(r, 'routes'));
  }

  /** The neighbour entries of `dev`, both families; none when the device is not there. */
  async listNeighbours(ns: Netns, dev: string): Promise<Neighbour[]> {
    const r = await this.#show(ns, ['neigh', 'show', 'dev', dev], `list neighbours of ${dev}`);
    return r === 'absent' ? [] : parseOne((await import('./schemas')).NeighbourListSchema, r, `neighbours of ${dev}`);
  }

  /** The forwarding entries of `dev` (`bridge fdb`); none when the device is not there. */
  async listFdb(ns: Netns, dev: string): Promise<FdbEntry[]> {
    const r = await this.#show(ns, ['fdb', 'show', 'dev', dev], `list fdb of ${dev}`, 'bridge');
    return r === 'absent' ? [] : parseOne((await import('./schemas')).FdbListSchema, r, `fdb of ${dev}`);
  }

  /** The addresses of `dev`, or undefined when there is no such device. */
  async linkAddresses(ns: Netns, dev: string): Promise<IpAddrLink | undefined> {
    const r = await this.#show(ns, ['addr', 'show', 'dev', dev], `list addresses of ${dev}`);
    return r === 'absent' ? undefined : (await parseAddrLinks(r, `addresses of ${dev}`))[0];
  }

  /** The device and source address the kernel would use to reach `dst`; undefined when unreachable. */
  async routeTo(ns: Netns, dst: string): Promise<{ dev: string; prefsrc?: string } | undefined> {
    const argv = ipArgv(ns, ['-j', 'route', 'get', dst]);
    const r = await this.#run(argv);
    if (r.exitCode !== 0) {
      if (/unreachable|No route/i.test(r.stderr)) return undefined;
      throw new NetError(`look up the route to ${dst} in ${describeNetns(ns)}`, r, argv);
    }
    const { RouteGetSchema } = await import('./schemas');
    const found = parseOne(RouteGetSchema, parseJsonLines(r.stdout), `route to ${dst}`)[0];
    return found?.dev ? { dev: found.dev, ...(found.prefsrc ? { prefsrc: found.prefsrc } : {}) } : undefined;
  }

  async #applyOneByOne(ns: Netns, lines: readonly BatchLine[], what: string): Promise<unknown[]> {
    const out: unknown[] = [];
    for (const [index, line] of lines.entries()) {
      const argv = ipArgv(ns, line.json ? ['-j', '-d', ...line.args] : [...line.args]);
      const r = await this.#run(argv);
      if (r.exitCode !== 0) {
        throw new NetError(`${what} in ${describeNetns(ns)} (ip ${line.args.join(' ')})`, r, argv, index);
      }
      if (line.json) out.push(...parseJsonLines(r.stdout));
    }
    return out;
  }

  /** The link called `name` in `ns`, or undefined when there is none. */
  async getLink(ns: Netns, name: string): Promise<IpLink | undefined> {
    if (this.#links) {
      try {
        const docs = this.#links.apply(ns, new IpBatch().showLink(name), `look up link ${name}`);
        return (await parseLinks(docs, `link ${name}`))[0];
      } catch (err) {
        if (err instanceof NetError && isNoDevice(err.stderr)) return undefined;
        throw err;
      }
    }
    const r = await this.#show(ns, ['link', 'show', 'dev', name], `look up link ${name}`);
    if (r === 'absent') return undefined;
    return (await parseLinks(r, `link ${name}`))[0];
  }

  /** Every link in `ns`. */
  async listLinks(ns: Netns): Promise<IpLink[]> {
    const r = await this.#show(ns, ['link', 'show'], 'list links');
    return r === 'absent' ? [] : parseLinks(r, 'links');
  }

  /** Every link in `ns`, or undefined when the namespace itself is gone (a pod's, after its death). */
  async linksIfPresent(ns: Netns): Promise<IpLink[] | undefined> {
    try {
      return await this.listLinks(ns);
    } catch (err) {
      if (err instanceof NetError && isNoNetns(err.stderr)) return undefined;
      throw err;
    }
  }

  /** The routes of the main table, both families; with `dev`, only those through that link. */
  async listRoutes(ns: Netns, dev?: string): Promise<LinkRoute[]> {
    const r = this.#links
      ? this.#links.routes(ns, dev)
      : await this.#show(ns, ['route', 'show', 'table', 'all'], 'list routes');
    if (r === 'absent') return [];
    const routes = toMainRoutes(await parseRoutes(this.#links ? [r] : r, 'routes'));
    return dev === undefined ? routes : routes.filter((route) => route.dev === dev);
  }

  /** Deletes link `name` (a veth takes its peer along). */
  async deleteLink(ns: Netns, name: string): Promise<'deleted' | 'absent'> {
    if (this.#links) return this.#links.deleteLink(ns, name);
    const argv = ipArgv(ns, ['link', 'del', 'dev', name]);
    const r = await this.#run(argv);
    if (r.exitCode === 0) return 'deleted';
    if (isNoDevice(r.stderr)) return 'absent';
    throw new NetError(`delete link ${name} in ${describeNetns(ns)}`, r, argv);
  }

  async #show(ns: Netns, args: string[], what: string, tool: 'ip' | 'bridge' = 'ip'): Promise<unknown[] | 'absent'> {
    const argv = ipArgv(ns, ['-j', '-d', ...args], tool);
    const r: RunResult = await this.#run(argv);
    if (r.exitCode !== 0) {
      if (isNoDevice(r.stderr)) return 'absent';
      throw new NetError(`${what} in ${describeNetns(ns)}`, r, argv);
    }
    return parseJsonLines(r.stdout);
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

/** Parses the first JSON document of a show with `schema`; a mismatch is a NetError naming `what`. */
export function parseOne<T>(schema: z.ZodMiniType<T>, docs: unknown[], what: string): T {
  const r = schema.safeParse(docs[0] ?? []);
  if (r.success) return r.data;
  throw new NetError(
    `parse ip output for ${what}`,
    { exitCode: 0, stdout: '', stderr: describeFirstIssue(r.error) },
    [],
  );
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
