/**
 * IpBatch collects iproute2 commands for one namespace so they run in one process (`ip -batch -`):
 * one spawn instead of one per change, which is most of a CNI ADD's cost. Only typed methods append
 * lines, so no caller ever writes a command line.
 */

/**
 * One `ip` command, as argv after `ip`, and whether it prints JSON (a show). A batch with any show runs
 * as `ip -j -d -batch -`: global options cannot appear inside batch lines.
 */
export interface BatchLine {
  readonly args: readonly string[];
  readonly json: boolean;
}

export interface VethSpec {
  name: string;
  mac?: string;
  mtu?: number;
  peer: { name: string; mac?: string; mtu?: number /** netns path the peer is created in */; netns?: string };
}

export interface RouteSpec {
  dst: string;
  dev: string;
  via?: string;
  scope?: 'link' | 'global';
}

export class IpBatch {
  readonly lines: BatchLine[] = [];

  #push(args: string[], json = false): this {
    this.lines.push({ args, json });
    return this;
  }

  /** Creates a veth pair; the peer may be born directly inside another namespace. */
  addVeth(spec: VethSpec): this {
    const args = ['link', 'add', spec.name];
    if (spec.mac) args.push('address', spec.mac);
    if (spec.mtu) args.push('mtu', String(spec.mtu));
    args.push('type', 'veth', 'peer', 'name', spec.peer.name);
    if (spec.peer.mac) args.push('address', spec.peer.mac);
    if (spec.peer.mtu) args.push('mtu', String(spec.peer.mtu));
    if (spec.peer.netns) args.push('netns', spec.peer.netns);
    return this.#push(args);
  }

  /** `none` stops the kernel from generating a link-local address (and running DAD on it). */
  setAddrGenMode(dev: string, mode: 'none' | 'eui64'): this {
    return this.#push(['link', 'set', 'dev', dev, 'addrgenmode', mode]);
  }

  setUp(dev: string): this {
    return this.#push(['link', 'set', 'dev', dev, 'up']);
  }

  setDown(dev: string): this {
    return this.#push(['link', 'set', 'dev', dev, 'down']);
  }

  rename(dev: string, to: string): this {
    return this.#push(['link', 'set', 'dev', dev, 'name', to]);
  }

  setAlias(dev: string, alias: string): this {
    return this.#push(['link', 'set', 'dev', dev, 'alias', alias]);
  }

  /** The link's group (IFLA_GROUP): a number, or `default` (0). */
  setGroup(dev: string, group: number | 'default'): this {
    return this.#push(['link', 'set', 'dev', dev, 'group', String(group)]);
  }

  setMac(dev: string, mac: string): this {
    return this.#push(['link', 'set', 'dev', dev, 'address', mac]);
  }

  /** Moves `dev` into the namespace at `netnsPath` (it arrives down, without addresses). */
  moveTo(dev: string, netnsPath: string): this {
    return this.#push(['link', 'set', 'dev', dev, 'netns', netnsPath]);
  }

  /** Adds an address; `nodad` makes an IPv6 address usable at once (no duplicate detection on a /128). */
  addAddress(dev: string, cidr: string, opts: { nodad?: boolean } = {}): this {
    const args = ['addr', 'add', cidr, 'dev', dev];
    if (opts.nodad) args.push('nodad');
    return this.#push(args);
  }

  addRoute(r: RouteSpec): this {
    // The family follows from dst; batch lines cannot carry -4/-6.
    const args = ['route', 'add', r.dst];
    if (r.via) args.push('via', r.via);
    args.push('dev', r.dev);
    if (r.scope) args.push('scope', r.scope);
    return this.#push(args);
  }

  /** A permanent neighbour entry, so the pod never has to resolve its gateway. */
  replaceNeigh(dst: string, lladdr: string, dev: string): this {
    return this.#push(['neigh', 'replace', dst, 'lladdr', lladdr, 'dev', dev, 'nud', 'permanent']);
  }

  /** JSON: the link's ifindex, MAC, alias and kind. */
  showLink(dev: string): this {
    return this.#push(['link', 'show', 'dev', dev], true);
  }

  /** Every link with its MAC and addresses: one JSON document for a whole namespace. */
  showAllAddrs(): this {
    return this.#push(['addr', 'show'], true);
  }

  /** Every route of every table and family (batch lines cannot switch family, `table all` shows both). */
  showRoutes(): this {
    return this.#push(['route', 'show', 'table', 'all'], true);
  }
}

/**
 * Quotes one argument for `ip -batch`. iproute2's getcmdline cuts everything after `#` (even inside
 * quotes) and makeargs cannot express a word holding both quote characters, so such words are refused
 * and the caller runs the command on its own command line instead.
 */
export function quoteBatchWord(word: string): string | undefined {
  if (/[#\r\n\0]/.test(word)) return undefined;
  if (word !== '' && !/[\s'"]/.test(word)) return word;
  if (!word.includes('"')) return `"${word}"`;
  if (!word.includes("'")) return `'${word}'`;
  return undefined;
}
