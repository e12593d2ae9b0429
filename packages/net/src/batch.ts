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

/**
 * One typed change (or show) in a batch. The `ip -batch` line is derived from it (lineOf); the shim's
 * rtnetlink applier reads the ops themselves, so no one parses a command line back.
 */
export type BatchOp =
  | { op: 'addVeth'; spec: VethSpec }
  | { op: 'setAddrGenMode'; dev: string; mode: 'none' | 'eui64' }
  | { op: 'setUp'; dev: string; alias?: string }
  | { op: 'setDown'; dev: string }
  | { op: 'rename'; dev: string; to: string }
  | { op: 'setAlias'; dev: string; alias: string }
  | { op: 'setGroup'; dev: string; group: number | 'default' }
  | { op: 'setMac'; dev: string; mac: string }
  | { op: 'moveTo'; dev: string; netnsPath: string }
  | { op: 'addAddress'; dev: string; cidr: string; nodad: boolean }
  | { op: 'replaceAddress'; dev: string; cidr: string; nodad: boolean }
  | { op: 'deleteAddress'; dev: string; cidr: string }
  | { op: 'addRoute'; route: RouteSpec }
  | { op: 'ownedRoute'; verb: 'add' | 'replace'; route: OwnedRouteSpec }
  | { op: 'deleteOwnedRoute'; dst: string; proto: number }
  | { op: 'addVxlan'; spec: VxlanSpec }
  | { op: 'replaceNeigh'; dst: string; lladdr: string; dev: string }
  | { op: 'deleteNeigh'; dst: string; dev: string }
  | { op: 'showLink'; dev: string }
  | { op: 'showAllAddrs' }
  | { op: 'showRoutes' };

export class IpBatch {
  readonly tool = 'ip';
  readonly ops: BatchOp[] = [];

  /** The batch as iproute2 command lines, in order. */
  get lines(): BatchLine[] {
    return this.ops.map(lineOf);
  }

  #push(op: BatchOp): this {
    this.ops.push(op);
    return this;
  }

  /** Creates a veth pair; the peer may be born directly inside another namespace. */
  addVeth(spec: VethSpec): this {
    return this.#push({ op: 'addVeth', spec });
  }

  /** `none` stops the kernel from generating a link-local address (and running DAD on it). */
  setAddrGenMode(dev: string, mode: 'none' | 'eui64'): this {
    return this.#push({ op: 'setAddrGenMode', dev, mode });
  }

  /**
   * Sets the link up; with `alias`, its alias (IFLA_IFALIAS, at most 255 bytes) in the same request, so
   * a marker costs no request of its own.
   */
  setUp(dev: string, opts: { alias?: string } = {}): this {
    return this.#push({ op: 'setUp', dev, ...(opts.alias === undefined ? {} : { alias: opts.alias }) });
  }

  setDown(dev: string): this {
    return this.#push({ op: 'setDown', dev });
  }

  rename(dev: string, to: string): this {
    return this.#push({ op: 'rename', dev, to });
  }

  setAlias(dev: string, alias: string): this {
    return this.#push({ op: 'setAlias', dev, alias });
  }

  /** The link's group (IFLA_GROUP): a number, or `default` (0). */
  setGroup(dev: string, group: number | 'default'): this {
    return this.#push({ op: 'setGroup', dev, group });
  }

  setMac(dev: string, mac: string): this {
    return this.#push({ op: 'setMac', dev, mac });
  }

  /** Moves `dev` into the namespace at `netnsPath` (it arrives down, without addresses). */
  moveTo(dev: string, netnsPath: string): this {
    return this.#push({ op: 'moveTo', dev, netnsPath });
  }

  /** Adds an address; `nodad` makes an IPv6 address usable at once (no duplicate detection on a /128). */
  addAddress(dev: string, cidr: string, opts: { nodad?: boolean } = {}): this {
    return this.#push({ op: 'addAddress', dev, cidr, nodad: opts.nodad ?? false });
  }

  addRoute(route: RouteSpec): this {
    return this.#push({ op: 'addRoute', route });
  }

  /**
   * Adds an owned route to the main table. Fails ("File exists") when any route to dst with the same
   * metric is there, whoever owns it: a new route must never take another owner's place.
   */
  addOwnedRoute(r: OwnedRouteSpec): this {
    return this.#push({ op: 'ownedRoute', verb: 'add', route: r });
  }

  /** Changes an owned route in place (only for a route known to carry the owner's protocol). */
  replaceRoute(r: OwnedRouteSpec): this {
    return this.#push({ op: 'ownedRoute', verb: 'replace', route: r });
  }

  /** Deletes the route to `dst` only if it carries `proto`: another owner's route to dst stays. */
  deleteRoute(dst: string, proto: number): this {
    return this.#push({ op: 'deleteOwnedRoute', dst, proto });
  }

  /**
   * Creates a VXLAN device without learning: every remote MAC comes from an FDB entry its owner
   * writes, as flannel's vxlan backend does.
   */
  addVxlan(spec: VxlanSpec): this {
    return this.#push({ op: 'addVxlan', spec });
  }

  /** Adds the address, or leaves it as it is when the device has it already. */
  replaceAddress(dev: string, cidr: string, opts: { nodad?: boolean } = {}): this {
    return this.#push({ op: 'replaceAddress', dev, cidr, nodad: opts.nodad ?? false });
  }

  deleteAddress(dev: string, cidr: string): this {
    return this.#push({ op: 'deleteAddress', dev, cidr });
  }

  deleteNeigh(dst: string, dev: string): this {
    return this.#push({ op: 'deleteNeigh', dst, dev });
  }

  /** A permanent neighbour entry, so the pod never has to resolve its gateway. */
  replaceNeigh(dst: string, lladdr: string, dev: string): this {
    return this.#push({ op: 'replaceNeigh', dst, lladdr, dev });
  }

  /** JSON: the link's ifindex, MAC, alias and kind. */
  showLink(dev: string): this {
    return this.#push({ op: 'showLink', dev });
  }

  /** Every link with its MAC and addresses: one JSON document for a whole namespace. */
  showAllAddrs(): this {
    return this.#push({ op: 'showAllAddrs' });
  }

  /** Every route of every table and family (batch lines cannot switch family, `table all` shows both). */
  showRoutes(): this {
    return this.#push({ op: 'showRoutes' });
  }
}

/** The `ip` command line of one op. */
function lineOf(o: BatchOp): BatchLine {
  const line = (args: string[], json = false): BatchLine => ({ args, json });
  switch (o.op) {
    case 'addVeth': {
      const { spec } = o;
      const args = ['link', 'add', spec.name];
      if (spec.mac) args.push('address', spec.mac);
      if (spec.mtu) args.push('mtu', String(spec.mtu));
      args.push('type', 'veth', 'peer', 'name', spec.peer.name);
      if (spec.peer.mac) args.push('address', spec.peer.mac);
      if (spec.peer.mtu) args.push('mtu', String(spec.peer.mtu));
      if (spec.peer.netns) args.push('netns', spec.peer.netns);
      return line(args);
    }
    case 'setAddrGenMode':
      return line(['link', 'set', 'dev', o.dev, 'addrgenmode', o.mode]);
    case 'setUp':
      return line(['link', 'set', 'dev', o.dev, 'up', ...(o.alias === undefined ? [] : ['alias', o.alias])]);
    case 'setDown':
      return line(['link', 'set', 'dev', o.dev, 'down']);
    case 'rename':
      return line(['link', 'set', 'dev', o.dev, 'name', o.to]);
    case 'setAlias':
      return line(['link', 'set', 'dev', o.dev, 'alias', o.alias]);
    case 'setGroup':
      return line(['link', 'set', 'dev', o.dev, 'group', String(o.group)]);
    case 'setMac':
      return line(['link', 'set', 'dev', o.dev, 'address', o.mac]);
    case 'moveTo':
      return line(['link', 'set', 'dev', o.dev, 'netns', o.netnsPath]);
    case 'addAddress':
      return line(['addr', 'add', o.cidr, 'dev', o.dev, ...(o.nodad ? ['nodad'] : [])]);
    case 'replaceAddress':
      return line(['addr', 'replace', o.cidr, 'dev', o.dev, ...(o.nodad ? ['nodad'] : [])]);
    case 'deleteAddress':
      return line(['addr', 'del', o.cidr, 'dev', o.dev]);
    case 'addRoute': {
      // The family follows from dst; batch lines cannot carry -4/-6.
      const r = o.route;
      const args = ['route', 'add', r.dst];
      if (r.via) args.push('via', r.via);
      args.push('dev', r.dev);
      if (r.scope) args.push('scope', r.scope);
      return line(args);
    }
    case 'ownedRoute': {
      const r = o.route;
      const args = ['route', o.verb, r.dst, 'via', r.via];
      if (r.dev) args.push('dev', r.dev);
      if (r.onlink) args.push('onlink');
      args.push('proto', String(r.proto));
      return line(args);
    }
    case 'deleteOwnedRoute':
      return line(['route', 'del', o.dst, 'proto', String(o.proto), 'table', 'main']);
    case 'addVxlan': {
      const { spec } = o;
      const args = ['link', 'add', spec.name, 'address', spec.mac];
      if (spec.mtu) args.push('mtu', String(spec.mtu));
      args.push('type', 'vxlan', 'id', String(spec.vni), 'dstport', String(spec.port));
      if (spec.local) args.push('local', spec.local);
      if (spec.dev) args.push('dev', spec.dev);
      args.push('nolearning');
      return line(args);
    }
    case 'replaceNeigh':
      return line(['neigh', 'replace', o.dst, 'lladdr', o.lladdr, 'dev', o.dev, 'nud', 'permanent']);
    case 'deleteNeigh':
      return line(['neigh', 'del', o.dst, 'dev', o.dev]);
    case 'showLink':
      return line(['link', 'show', 'dev', o.dev], true);
    case 'showAllAddrs':
      return line(['addr', 'show'], true);
    case 'showRoutes':
      return line(['route', 'show', 'table', 'all'], true);
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
