/**
 * A recording stand-in for @ferry/net's Ip, so the shim's NIC code can be unit-tested without root. It
 * keeps what it was asked to create, per namespace (links with their peers, routes), which is enough to
 * answer getLink, listRoutes and deleteLink the way the kernel would, and records every call. When the
 * kernel would refuse a line (a name taken, a missing device, or a failure set with failLine), the error
 * is made by the real Ip from iproute2's own output, so it carries whatever kind @ferry/net gives it.
 * Methods it does not fake go to a runner that rejects: a test never silently runs iproute2.
 */
import { Ip, type IpBatch, type IpLink, Iproute2, type LinkRoute, type Netns, type RouteSpec } from '@ferry/net';

type BatchOp = IpBatch['ops'][number];

/** How a namespace is named in `calls` and in the helpers: 'node' for SELF, else its path. */
export const nsName = (ns: Netns): string => (ns.kind === 'self' ? 'node' : ns.path);

const FILE_EXISTS = 'RTNETLINK answers: File exists';
const noDevice = (dev: string) => `Cannot find device "${dev}"`;

export class FakeIp extends Ip {
  /** One line per call: `apply NS: line; line…`, `deleteLink NS NAME`, `getLink NS NAME`, `listRoutes NS DEV`. */
  readonly calls: string[] = [];
  readonly #links = new Map<string, Map<string, IpLink>>();
  readonly #peers = new Map<string, { ns: string; name: string }>();
  readonly #routes = new Map<string, RouteSpec[]>();
  readonly #failures: { line: string; stderr: string }[] = [];
  #nextIfindex = 100;

  constructor() {
    super(new Iproute2(() => Promise.reject(new Error('FakeIp: this Ip method is not faked'))));
  }

  /** The next batch line starting with `line` fails with iproute2's `stderr` (once). */
  failLine(line: string, stderr: string): void {
    this.#failures.push({ line, stderr });
  }

  link(ns: string, name: string): IpLink | undefined {
    return this.#links.get(ns)?.get(name);
  }

  linkNames(ns: string): string[] {
    return [...(this.#links.get(ns)?.keys() ?? [])].sort();
  }

  routes(ns: string): RouteSpec[] {
    return [...(this.#routes.get(ns) ?? [])];
  }

  /** Takes `dev` down, as someone on the node might. */
  setDown(ns: string, dev: string): void {
    const l = this.link(ns, dev);
    if (l) l.flags = (l.flags ?? []).filter((f) => f !== 'UP');
  }

  override async apply(ns: Netns, batch: IpBatch, what: string): Promise<unknown[]> {
    const lines = batch.lines.map((l) => l.args.join(' '));
    this.calls.push(`apply ${nsName(ns)}: ${lines.join('; ')}`);
    const out: unknown[] = [];
    for (const [index, op] of batch.ops.entries()) {
      const failure = this.#failures.findIndex((f) => lines[index]?.startsWith(f.line));
      const refused = failure >= 0 ? this.#failures.splice(failure, 1)[0]?.stderr : this.#effect(nsName(ns), op, out);
      if (refused !== undefined) throw await iproute2Failure(ns, batch, what, index, refused);
    }
    return out;
  }

  override async deleteLink(ns: Netns, name: string): Promise<'deleted' | 'absent'> {
    this.calls.push(`deleteLink ${nsName(ns)} ${name}`);
    return this.#delete(nsName(ns), name) ? 'deleted' : 'absent';
  }

  override async getLink(ns: Netns, name: string): Promise<IpLink | undefined> {
    this.calls.push(`getLink ${nsName(ns)} ${name}`);
    const l = this.link(nsName(ns), name);
    return l ? structuredClone(l) : undefined;
  }

  override async listRoutes(ns: Netns, dev?: string): Promise<LinkRoute[]> {
    this.calls.push(`listRoutes ${nsName(ns)} ${dev ?? ''}`.trimEnd());
    return this.routes(nsName(ns))
      .filter((r) => dev === undefined || r.dev === dev)
      .map((r) => ({
        dst: r.dst,
        dev: r.dev,
        family: r.dst.includes(':') ? 6 : 4,
        ...(r.via ? { gateway: r.via } : {}),
        ...(r.scope ? { scope: r.scope } : {}),
      }));
  }

  /** What the kernel does with one op; iproute2's error text when it refuses it. */
  #effect(ns: string, op: BatchOp, out: unknown[]): string | undefined {
    const dev = 'dev' in op ? op.dev : op.op === 'addRoute' ? op.route.dev : undefined;
    if (dev !== undefined && op.op !== 'addVeth' && !this.link(ns, dev)) return noDevice(dev);
    switch (op.op) {
      case 'addVeth': {
        const { spec } = op;
        const peerNs = spec.peer.netns ?? ns;
        if (this.link(ns, spec.name) || this.link(peerNs, spec.peer.name)) return FILE_EXISTS;
        this.#add(ns, spec.name, spec.mac, spec.mtu);
        this.#add(peerNs, spec.peer.name, spec.peer.mac, spec.peer.mtu);
        this.#peers.set(`${ns}\n${spec.name}`, { ns: peerNs, name: spec.peer.name });
        this.#peers.set(`${peerNs}\n${spec.peer.name}`, { ns, name: spec.name });
        return undefined;
      }
      case 'setUp': {
        const l = this.link(ns, op.dev);
        if (l && !l.flags?.includes('UP')) l.flags = [...(l.flags ?? []), 'UP'];
        return undefined;
      }
      case 'addRoute': {
        const routes = this.#routes.get(ns) ?? [];
        if (routes.some((r) => r.dst === op.route.dst)) return FILE_EXISTS;
        this.#routes.set(ns, [...routes, op.route]);
        return undefined;
      }
      case 'showLink':
        out.push([structuredClone(this.link(ns, op.dev))]);
        return undefined;
      default:
        // Addresses, neighbours, addrgenmode: recorded in `calls`, not modelled.
        return undefined;
    }
  }

  #add(ns: string, name: string, mac: string | undefined, mtu: number | undefined): void {
    const ifindex = this.#nextIfindex++;
    const links = this.#links.get(ns) ?? new Map<string, IpLink>();
    this.#links.set(ns, links);
    const hex = ifindex.toString(16).padStart(4, '0');
    links.set(name, {
      ifindex,
      ifname: name,
      address: mac ?? `02:00:00:00:${hex.slice(0, 2)}:${hex.slice(2)}`,
      mtu: mtu ?? 1500,
      flags: ['BROADCAST', 'MULTICAST'],
      link_type: 'ether',
    });
  }

  /** Deletes a link, its veth peer, and the routes through either. */
  #delete(ns: string, name: string): boolean {
    if (!this.#links.get(ns)?.delete(name)) return false;
    this.#routes.set(
      ns,
      this.routes(ns).filter((r) => r.dev !== name),
    );
    const peer = this.#peers.get(`${ns}\n${name}`);
    this.#peers.delete(`${ns}\n${name}`);
    if (peer) {
      this.#peers.delete(`${peer.ns}\n${peer.name}`);
      this.#delete(peer.ns, peer.name);
    }
    return true;
  }
}

/** The error the real Ip throws when iproute2 refuses line `index` of `batch` with `stderr`. */
async function iproute2Failure(ns: Netns, batch: IpBatch, what: string, index: number, stderr: string) {
  const failing = new Ip(
    new Iproute2(async () => ({
      exitCode: 1,
      stdout: '',
      stderr: `${stderr}\nCommand failed -:${index + 1}\n`,
    })),
  );
  try {
    await failing.apply(ns, batch, what);
  } catch (err) {
    return err;
  }
  throw new Error('FakeIp: a failing iproute2 run did not throw');
}
