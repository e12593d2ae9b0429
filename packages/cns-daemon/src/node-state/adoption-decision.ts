/**
 * What adoption does with what the node showed (node-reading.ts): a pure function of that reading and of
 * what the database holds (AdoptionFacts), giving the plan Attachments.adopt writes and what to log.
 *
 * Trust. A host veth's alias and routes live on the node, where only root writes: they decide the key,
 * the generation and the addresses (taken from whoever the database gave them to: the kernel routes each
 * to one veth only). What is read inside a pod (whose root can rewrite its links) decides only which of
 * that pod's own links are its delegated devices, and a device is taken only when ferryd would give it
 * to that pod anyway: configured (in the inventory by MAC), not on the node, held by no other interface,
 * and claimed by no other pod in the same pass (two claims: neither gets it). A secondary network's
 * attachments come after the host veths, so nothing a pod says can take what a trusted marker gave: the
 * device only as above, its addresses only inside that network's pool and only where no interface holds
 * them.
 */
import type { IpLink } from '@ferry/net';
import { HOST_VETH_MAC } from '@ferry/shared-types/host-veth';
import { DELEGATED_GROUP, parseMarker } from '@ferry/shared-types/link-marker';
import type {
  AdoptedAddress,
  AdoptedAttachment,
  AdoptedDevice,
  AdoptedInterface,
  AdoptionPlan,
} from '../attachments/adoption-plan';
import type { NetworkPools } from '../ipam/ipam';
import { poolOf } from '../ipam/pool';
import type { DeviceRow } from '../store/rows';
import { type HostVethSeen, macOf, type NodeReading, type SecondarySeen } from './node-reading';

/** What the database holds, as the decision needs it (read in the transaction that writes the plan). */
export interface AdoptionFacts {
  networks: readonly NetworkPools[];
  /** The attachment held under this key: its generation and its interfaces' IDs (released if it is older). */
  held(containerId: string, ifName: string): { generation: number; interfaceIds: readonly number[] } | undefined;
  /** The names of the container's interfaces in its other attachments. */
  otherIfNames(containerId: string, ifName: string): readonly string[];
  /** The device last seen with this MAC (none when no device, or more than one, was). */
  device(mac: string): DeviceRow | undefined;
  /** The interface `address` of the pool is Assigned to; undefined when none is. */
  holderOf(poolId: number, address: string): number | undefined;
}

/** A log line: its fields and message. */
export interface Note {
  fields: Record<string, unknown>;
  msg: string;
}

export interface AdoptionDecision {
  plan: AdoptionPlan;
  /** What to log for each planned attachment once it is written (by index). */
  notes: Note[][];
  /** What to log now: devices in pods that are not adopted as a secondary network's attachment. */
  refused: Note[];
}

export function decideAdoption(reading: NodeReading, facts: AdoptionFacts, releasedSinceMs: number): AdoptionDecision {
  const claims = deviceClaims(reading);
  const decision: AdoptionDecision = {
    plan: { generationsAbove: reading.maxGeneration, releasedSinceMs, attachments: [] },
    notes: [],
    refused: [],
  };
  /** The pool addresses this plan gives (`poolId address`). */
  const given = new Set<string>();
  const push = (a: AdoptedAttachment, notes: Note[]) => {
    decision.plan.attachments.push(a);
    decision.notes.push(notes);
  };
  for (const c of reading.hostVeths) {
    const held = facts.held(c.containerId, c.ifName);
    if (held && held.generation >= c.generation) continue;
    const freed = new Set(held?.interfaceIds);
    const notes: Note[] = [];
    const addresses = c.addresses.map(({ poolId, address }): AdoptedAddress => {
      const holder = facts.holderOf(poolId, address);
      const taken = given.has(`${poolId} ${address}`) || (holder !== undefined && !freed.has(holder));
      if (taken) {
        notes.push({
          fields: { address, containerId: c.containerId, ifName: c.ifName, fromInterface: holder },
          msg: 'address recorded for another interface is routed to this pod on the node: the node wins',
        });
      }
      given.add(`${poolId} ${address}`);
      return { poolId, address };
    });
    // What the pod side shows is only recorded for CHECK: nothing is decided by it.
    const peer = c.podLinks?.find((l) => l.ifname === c.ifName && l.linkinfo?.info_kind === 'veth');
    const infra: AdoptedInterface = {
      ifName: c.ifName,
      nicType: 'InfraNIC',
      routesJson: facts.networks.find((n) => n.config.name === c.network)?.routesJson ?? '[]',
      hostVethName: c.veth,
      ...shownOf(peer),
      addresses,
    };
    const devices = devicesOf(c, facts, freed, claims, reading, notes);
    push(
      {
        network: c.network,
        containerId: c.containerId,
        ifName: c.ifName,
        netns: c.netns,
        generation: c.generation,
        interfaces: [infra, ...devices],
      },
      notes,
    );
  }
  // After the host veths: a pod's word never takes what a trusted marker gave.
  for (const sc of reading.secondaries) {
    const a = secondaryOf(sc, facts, claims, reading, given, decision.refused);
    if (a) push(a, []);
  }
  return decision;
}

/** The host veth's delegated devices, each held for it when ferryd would give it to that pod anyway. */
function devicesOf(
  c: HostVethSeen,
  facts: AdoptionFacts,
  freed: ReadonlySet<number>,
  claims: ReadonlyMap<string, number>,
  reading: NodeReading,
  notes: Note[],
): AdoptedInterface[] {
  const names = new Set([c.ifName, ...facts.otherIfNames(c.containerId, c.ifName)]);
  const out: AdoptedInterface[] = [];
  for (const l of claimedLinks(c)) {
    const mac = macOf(l);
    const row = mac ? facts.device(mac) : undefined;
    const refused =
      deviceRefusal(mac, row, freed, claims, reading) ??
      (names.has(l.ifname) ? `interface name ${l.ifname} is taken in the container` : undefined);
    const device = refused || !row ? undefined : deviceOf(row, l, reading);
    if (!device) {
      notes.push({
        fields: {
          containerId: c.containerId,
          ifName: l.ifname,
          mac,
          reason: refused ?? 'its name on the node is not known',
        },
        msg: 'device in pod not adopted',
      });
      continue;
    }
    names.add(l.ifname);
    out.push({ ifName: l.ifname, nicType: 'DelegatedNIC', routesJson: '[]', device, ...shownOf(l), addresses: [] });
  }
  return out;
}

/** One secondary network's attachment; undefined (with what to log in `refused`) when not adopted. */
function secondaryOf(
  sc: SecondarySeen,
  facts: AdoptionFacts,
  claims: ReadonlyMap<string, number>,
  reading: NodeReading,
  given: Set<string>,
  refused: Note[],
): AdoptedAttachment | undefined {
  const { key, link } = sc;
  const held = facts.held(key.containerId, link.ifname);
  if (held && held.generation >= key.generation) return undefined;
  const freed = new Set(held?.interfaceIds);
  const net = facts.networks.find((n) => n.config.name === key.network);
  const mac = macOf(link);
  const row = mac ? facts.device(mac) : undefined;
  const reason = !net
    ? 'no such network'
    : net.config.infraNIC
      ? 'not a secondary network'
      : deviceRefusal(mac, row, freed, claims, reading);
  const device = reason || !row ? undefined : deviceOf(row, link, reading);
  if (!net || !device) {
    refused.push({
      fields: { ...key, ifName: link.ifname, mac, reason: reason ?? 'its name on the node is not known' },
      msg: 'secondary network device in pod not adopted',
    });
    return undefined;
  }
  const addresses = sc.addresses.flatMap((cidr): AdoptedAddress[] => {
    const address = cidr.split('/')[0] ?? '';
    const pool = poolOf(net.pools, address);
    if (!pool) return [];
    const holder = facts.holderOf(pool.poolId, address);
    const k = `${pool.poolId} ${address}`;
    if (given.has(k) || (holder !== undefined && !freed.has(holder))) return [];
    given.add(k);
    return [{ poolId: pool.poolId, address }];
  });
  return {
    network: key.network,
    containerId: key.containerId,
    ifName: link.ifname,
    netns: sc.netns,
    generation: key.generation,
    interfaces: [
      { ifName: link.ifname, nicType: 'DelegatedNIC', routesJson: net.routesJson, device, ...shownOf(link), addresses },
    ],
  };
}

/** Why a device a pod shows may not be held for it; undefined when ferryd would give it to that pod anyway. */
function deviceRefusal(
  mac: string | undefined,
  row: DeviceRow | undefined,
  freed: ReadonlySet<number>,
  claims: ReadonlyMap<string, number>,
  reading: NodeReading,
): string | undefined {
  if (!mac) return 'no MAC';
  if (!row) return 'not in the inventory';
  if (row.interface_id !== null && !freed.has(row.interface_id)) return 'held by another interface';
  if (reading.nodeMacs.has(mac)) return 'a device with that MAC is on the node';
  return (claims.get(mac) ?? 0) > 1 ? 'claimed by more than one pod' : undefined;
}

/**
 * The device as its interface holds it, with its name on the node. A device configured by MAC that a
 * fresh database has never seen on the node has none recorded: it takes the one its marker names (what
 * the shim wrote when it moved the device in), if that is a valid name no link on the node has. Only
 * the name comes from the pod, and only for a device that is ferryd's anyway; a false one fails that
 * device's DEL with code 107 at worst, and never touches another link.
 */
function deviceOf(row: DeviceRow, l: IpLink, reading: NodeReading): AdoptedDevice | undefined {
  const mac = macOf(l) ?? row.mac ?? row.id;
  if (row.host_if_name)
    return { id: row.id, mac, group: row.grp, hostIfName: row.host_if_name, learnedHostIfName: false };
  const named = parseMarker(l.ifalias)?.hostIfName;
  if (!named || reading.nodeNames.has(named)) return undefined;
  return { id: row.id, mac, group: row.grp, hostIfName: named, learnedHostIfName: true };
}

function shownOf(l: IpLink | undefined): Pick<AdoptedInterface, 'shown'> {
  return l?.address ? { shown: { mac: l.address, ifIndex: l.ifindex } } : {};
}

/** How many attachments claim each MAC: a device two pods (or two attachments) claim is neither's. */
function deviceClaims(reading: NodeReading): Map<string, number> {
  const claims = new Map<string, number>();
  const links = [...reading.hostVeths.flatMap((c) => claimedLinks(c)), ...reading.secondaries.map((s) => s.link)];
  for (const l of links) {
    const mac = macOf(l);
    if (mac) claims.set(mac, (claims.get(mac) ?? 0) + 1);
  }
  return claims;
}

/**
 * The pod's links that say they are this attachment's delegated devices: their marker names it, or (the
 * alias overwritten) they are still in Ferry's link group and no other attachment is being adopted in
 * that netns. The InfraNIC's own peer, loopback and links without a MAC never are.
 */
function claimedLinks(c: HostVethSeen): IpLink[] {
  return (c.podLinks ?? []).filter((l) => {
    if (l.ifname === c.ifName || l.ifname === 'lo' || !macOf(l) || macOf(l) === HOST_VETH_MAC) return false;
    const marker = parseMarker(l.ifalias);
    if (marker) return marker.attachmentIfName === c.ifName;
    return l.group === String(DELEGATED_GROUP) && c.inSameNetns === 1;
  });
}
