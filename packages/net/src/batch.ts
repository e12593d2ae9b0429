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

/**
 * A route Ferry owns: it carries Ferry's route protocol number, so listing and deleting by that number
 * never reaches anyone else's routes. `onlink` tells the kernel the next hop is on `dev` whatever
 * its addresses say (a VXLAN peer's VTEP address).
 */
export interface OwnedRouteSpec {
  dst: string;
  via: string;
  proto: number;
  dev?: string;
  onlink?: boolean;
}

export interface VxlanSpec {
  name: string;
  vni: number;
  port: number;
  mac: string;
  mtu?: number;
  /** The underlay address the tunnel leaves from (required for an IPv6 underlay). */
  local?: string;
  /** The underlay device. */
  dev?: string;
}

export class IpBatch {
  readonly tool = 'ip';
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

  /**
   * Adds an owned route to the main table. Fails ("File exists") when any route to dst with the same
   * metric is there, whoever owns it: a new route must never take another owner's place.
   */
  addOwnedRoute(r: OwnedRouteSpec): this {
    return this.#push(ownedRouteArgs('add', r));
  }

  /** Changes an owned route in place (only for a route known to carry the owner's protocol). */
  replaceRoute(r: OwnedRouteSpec): this {
    return this.#push(ownedRouteArgs('replace', r));
  }

  /** Deletes the route to `dst` only if it carries `proto`: another owner's route to dst stays. */
  deleteRoute(dst: string, proto: number): this {
    return this.#push(['route', 'del', dst, 'proto', String(proto), 'table', 'main']);
  }

  /**
   * Creates a VXLAN device without learning: every remote MAC comes from an FDB entry its owner
   * writes, as flannel's vxlan backend does.
   */
  addVxlan(spec: VxlanSpec): this {
    const args = ['link', 'add', spec.name, 'address', spec.mac];
    if (spec.mtu) args.push('mtu', String(spec.mtu));
    args.push('type', 'vxlan', 'id', String(spec.vni), 'dstport', String(spec.port));
    if (spec.local) args.push('local', spec.local);
    if (spec.dev) args.push('dev', spec.dev);
    args.push('nolearning');
    return this.#push(args);
  }

  /** Adds the address, or leaves it as it is when the device has it already. */
  replaceAddress(dev: string, cidr: string, opts: { nodad?: boolean } = {}): this {
    const args = ['addr', 'replace', cidr, 'dev', dev];
    if (opts.nodad) args.push('nodad');
    return this.#push(args);
  }

  deleteAddress(dev: string, cidr: string): this {
    return this.#push(['addr', 'del', cidr, 'dev', dev]);
  }

  deleteNeigh(dst: string, dev: string): this {
    return this.#push(['neigh', 'del', dst, 'dev', dev]);
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

function ownedRouteArgs(verb: 'add' | 'replace', r: OwnedRouteSpec): string[] {
  const args = ['route', verb, r.dst, 'via', r.via];
  if (r.dev) args.push('dev', r.dev);
  if (r.onlink) args.push('onlink');
  args.push('proto', String(r.proto));
  return args;
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

/**
 * Forwarding entries of a VXLAN device (`bridge fdb`): which underlay address a remote VTEP MAC lives
 * behind. Run by Ip.apply as `bridge -batch -`.
 */
export class FdbBatch {
  readonly tool = 'bridge';
  readonly lines: BatchLine[] = [];

  replace(mac: string, dev: string, dst: string): this {
    this.lines.push({ args: ['fdb', 'replace', mac, 'dev', dev, 'dst', dst, 'self', 'permanent'], json: false });
    return this;
  }

  delete(mac: string, dev: string, dst: string): this {
    this.lines.push({ args: ['fdb', 'del', mac, 'dev', dev, 'dst', dst, 'self'], json: false });
    return this;
  }
}
