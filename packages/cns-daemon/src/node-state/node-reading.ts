/**
 * Reads the node for adoption (adoption.ts), outside any transaction, as plain data: the marked host
 * veths whose attachment the database lacks (or holds in an older generation) with the pool addresses
 * routed to them, the links of their pods, the secondary networks' devices in those pods, and what the
 * node's own links are. Nothing is decided here beyond "the database lacks it": adoption-decision.ts
 * decides, Attachments.adopt writes.
 */
import { type Ip, type IpLink, netnsAt, SELF } from '@ferry/net';
import { HOST_VETH_PREFIX } from '@ferry/shared-types/host-veth';
import {
  type AttachmentKey,
  type HostVethMarker,
  parseHostVethMarker,
  parseMarker,
} from '@ferry/shared-types/link-marker';
import type { Logger } from 'pino';
import { hostVethNameOf } from '../attachments/host-veth';
import { bitsOf, familyOf } from '../ipam/cidr';
import type { PoolSpec } from '../ipam/pool';

/** Pods whose links are read at once (one `ip` in the pod's netns each). */
const POD_READS_AT_ONCE = 8;

export interface PoolAddress {
  spec: PoolSpec;
  poolId: number;
  /** Without prefix length. */
  address: string;
}

/** A marked host veth whose attachment the database lacks (or holds in an older generation). */
export interface HostVethSeen {
  veth: string;
  generation: number;
  network: string;
  containerId: string;
  ifName: string;
  /** '' when the marker names none. */
  netns: string;
  addresses: PoolAddress[];
  /** The pod's links (undefined: no netns known, or it could not be read). */
  podLinks?: IpLink[];
  /** Host veths seen in this netns, this one included. */
  inSameNetns: number;
}

/** A secondary network's device found in a pod this pass reads, its marker naming an attachment the database lacks. */
export interface SecondarySeen {
  netns: string;
  link: IpLink;
  key: AttachmentKey;
  /** The device's addresses in the pod (CIDR notation). */
  addresses: string[];
}

export interface NodeReading {
  hostVeths: HostVethSeen[];
  secondaries: SecondarySeen[];
  /** Every MAC (current or permanent) of the node's links. */
  nodeMacs: ReadonlySet<string>;
  /** Every name of the node's links. */
  nodeNames: ReadonlySet<string>;
  /** The largest generation any marker on the node or in the pods read shows (0: none). */
  maxGeneration: number;
}

export interface NodeReadingDeps {
  ip: Ip;
  log: Logger;
  /** The pool a host route's address is in, of any network. */
  poolOf(address: string): { spec: PoolSpec; poolId: number } | undefined;
  /** True when the database lacks the attachment in this generation (or a newer one) and no release of it was asked. */
  lacks(containerId: string, ifName: string, generation: number): boolean;
  /** Says once per veth that its marker is unusable. */
  report(veth: string, fields: Record<string, unknown>, msg: string): void;
}

export const macOf = (l: IpLink) => (l.permaddr ?? l.address)?.toLowerCase();

export async function readNode(deps: NodeReadingDeps): Promise<NodeReading> {
  const { ip } = deps;
  // Together: each is an `ip` run, and a taking-over ferryd's first pass is time its predecessor holds requests.
  const [links, routes] = await Promise.all([ip.listLinks(SELF), ip.listRoutes(SELF)]);
  const hostRoutes = new Map<string, string[]>();
  for (const r of routes) {
    if (!r.dev?.startsWith(HOST_VETH_PREFIX)) continue;
    hostRoutes.set(r.dev, [...(hostRoutes.get(r.dev) ?? []), r.dst]);
  }
  const marked = links.flatMap((l) => {
    const marker = l.linkinfo?.info_kind === 'veth' ? parseHostVethMarker(l.ifalias) : undefined;
    return marker ? [{ link: l, marker }] : [];
  });
  const hostVeths = marked.flatMap(({ link, marker }) => {
    const seen = hostVethSeen(deps, link.ifname, marker, hostRoutes.get(link.ifname) ?? []);
    return seen ? [seen] : [];
  });
  for (const c of hostVeths) {
    c.inSameNetns = c.netns === '' ? 1 : hostVeths.filter((o) => o.netns === c.netns).length;
  }
  await readPods(deps, hostVeths);
  const secondaries = await secondariesIn(deps, hostVeths);
  return {
    hostVeths,
    secondaries,
    nodeMacs: new Set(links.flatMap((l) => macOf(l) ?? [])),
    nodeNames: new Set(links.map((l) => l.ifname)),
    maxGeneration: Math.max(0, ...marked.map((m) => m.marker.generation), ...secondaries.map((s) => s.key.generation)),
  };
}

/** What a marked veth shows, or undefined when the database already holds its attachment. */
function hostVethSeen(
  deps: NodeReadingDeps,
  veth: string,
  marker: HostVethMarker,
  dsts: readonly string[],
): HostVethSeen | undefined {
  // A marker too long for its key (network and container ID past 255 bytes together) names no key: the
  // addresses are held under the veth's name until the veth goes (a DEL cannot find them by its key).
  const containerId = marker.containerId ?? `adopted.${veth}`;
  if (marker.network !== undefined && hostVethNameOf(marker.network, containerId, marker.ifName) !== veth) {
    deps.report(veth, { marker }, 'host veth marker does not match its name: not adopted');
    return undefined;
  }
  if (!deps.lacks(containerId, marker.ifName, marker.generation)) return undefined;
  // Only now, for the few veths the database lacks: every pass sees every pod's veth.
  const addresses = dsts.flatMap((dst) => hostAddressOf(deps, dst));
  const network = marker.network ?? addresses[0]?.spec.network;
  if (network === undefined) return undefined;
  return {
    veth,
    generation: marker.generation,
    network,
    containerId,
    ifName: marker.ifName,
    netns: marker.netns ?? '',
    addresses,
    inSameNetns: 1,
  };
}

/** A host route's destination as a pool address: a /32 or /128 inside a configured pool. */
function hostAddressOf(deps: NodeReadingDeps, dst: string): PoolAddress[] {
  const [address = '', prefix] = dst.split('/');
  if (Number(prefix) !== bitsOf(familyOf(address))) return [];
  const pool = deps.poolOf(address);
  return pool ? [{ spec: pool.spec, poolId: pool.poolId, address }] : [];
}

async function readPods(deps: NodeReadingDeps, seen: HostVethSeen[]): Promise<void> {
  const queue = seen.filter((c) => c.netns !== '');
  const read = async () => {
    for (let c = queue.shift(); c; c = queue.shift()) {
      try {
        c.podLinks = (await deps.ip.linksIfPresent(netnsAt(c.netns))) ?? [];
      } catch (err) {
        deps.log.warn({ err, netns: c.netns }, 'could not read the pod of an adopted endpoint: its devices wait');
      }
    }
  };
  await Promise.all(Array.from({ length: POD_READS_AT_ONCE }, read));
}

/** The secondary networks' devices in the pods read, whose attachment the database lacks, with their addresses. */
async function secondariesIn(deps: NodeReadingDeps, seen: readonly HostVethSeen[]): Promise<SecondarySeen[]> {
  const found: SecondarySeen[] = [];
  const netnses = new Set<string>();
  for (const c of seen) {
    if (c.netns === '' || netnses.has(c.netns)) continue;
    netnses.add(c.netns);
    for (const link of c.podLinks ?? []) {
      const marker = parseMarker(link.ifalias);
      const key = marker?.attachment;
      // The device takes CNI_IFNAME: its marker's attachment is its own name.
      if (!marker || !key || marker.attachmentIfName !== link.ifname) continue;
      if (!deps.lacks(key.containerId, link.ifname, key.generation)) continue;
      const shown = await deps.ip.linkAddresses(netnsAt(c.netns), link.ifname).catch(() => undefined);
      const addresses = (shown?.addr_info ?? []).map((a) => `${a.local}/${a.prefixlen}`);
      found.push({ netns: c.netns, link, key, addresses });
    }
  }
  return found;
}
