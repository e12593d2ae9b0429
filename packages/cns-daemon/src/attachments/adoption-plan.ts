/**
 * What the node showed that the database lacks, as a plan the state machine writes (Attachments.adopt):
 * whole attachments with their interfaces, the delegated devices held for them, and the pool addresses
 * adopted into their pools. Whoever finds such attachments (node-state/adoption.ts from the host veths'
 * markers and the pods' devices; a cluster's blocks later) says what it found as data; how it is
 * written is decided here, once: a release asked for since the node was read keeps the attachment out,
 * a generation the database already holds (or a newer one) is left, an older one is released first, then
 * the attachment is inserted with everything it holds, in one transaction.
 */
import type { SupportedNicType } from '@ferry/shared-types/nic';
import { endpointIdOf } from '@ferry/shared-types/nic';
import type { Ipam } from '../ipam/ipam';
import type { AdoptedStore } from '../store/adopted';
import type { AttachmentStore } from '../store/attachments';
import type { DeviceStore } from '../store/devices';
import type { AttachmentRow } from '../store/rows';

export interface AdoptionPlan {
  /** Every generation handed out from now on is above this one (the largest the node shows). */
  generationsAbove: number;
  /** A release asked for at or after this moment keeps its attachment out: the node was read before it. */
  releasedSinceMs: number;
  attachments: AdoptedAttachment[];
}

export interface AdoptedAttachment {
  network: string;
  containerId: string;
  ifName: string;
  /** '' when the marker names none. */
  netns: string;
  /** The generation the node shows: the attachment's key, unless another attachment already has it. */
  generation: number;
  /** In position order. */
  interfaces: AdoptedInterface[];
}

export interface AdoptedInterface {
  ifName: string;
  nicType: SupportedNicType;
  routesJson: string;
  hostVethName?: string;
  /** A delegated device, held for this interface. */
  device?: AdoptedDevice;
  /** What the pod shows of it (recorded for CHECK: nothing is decided by it). */
  shown?: { mac: string; ifIndex: number };
  /** Addresses adopted into their pools: Assigned to this interface, whatever the database said. */
  addresses: AdoptedAddress[];
}

export interface AdoptedDevice {
  /** Its identity (the devices row's key). */
  id: string;
  /** The MAC it has in the pod. */
  mac: string;
  group: string;
  hostIfName: string;
  /** The database had no name on the node for it: `hostIfName` is recorded for the device too. */
  learnedHostIfName: boolean;
}

export interface AdoptedAddress {
  poolId: number;
  /** Without prefix length. */
  address: string;
}

/** What writing one planned attachment did: undefined when it was left out. */
export type AdoptionWritten = { generation: number; replacedGeneration?: number } | undefined;

export interface AdoptionWrites {
  attachmentStore: AttachmentStore;
  adopted: AdoptedStore;
  devices: DeviceStore;
  ipam: Ipam;
  nowMs: number;
  releaseAskedSince(containerId: string, ifName: string, sinceMs: number): boolean;
  /** Releases an attachment as a DEL would (inside the caller's transaction). */
  release(a: AttachmentRow): void;
}

/** The plan, inside the caller's transaction; one outcome per planned attachment, in order. */
export function writeAdoption(plan: AdoptionPlan, w: AdoptionWrites): AdoptionWritten[] {
  const { attachmentStore, adopted, devices, ipam, nowMs } = w;
  // Generations never repeat, whatever the database forgot.
  if (plan.generationsAbove > adopted.sequence()) adopted.raiseSequence(plan.generationsAbove);
  return plan.attachments.map((a): AdoptionWritten => {
    if (w.releaseAskedSince(a.containerId, a.ifName, plan.releasedSinceMs)) return undefined;
    const held = attachmentStore.getAttachment(a.containerId, a.ifName);
    if (held && held.generation >= a.generation) return undefined;
    // A restored database's older incarnation: the node's is the one that lives.
    if (held) w.release(held);
    const row = adopted.insert(a, nowMs);
    for (const [position, i] of a.interfaces.entries()) {
      const d = i.device;
      if (d?.learnedHostIfName) devices.upsert(d.id, d.mac, d.group, d.hostIfName);
      const interfaceId = attachmentStore.insertInterface({
        attachmentId: row.generation,
        position,
        containerId: a.containerId,
        ifName: i.ifName,
        endpointId: endpointIdOf(i.nicType, a.containerId, i.ifName),
        nicType: i.nicType,
        routesJson: i.routesJson,
        ...(i.hostVethName ? { hostVethName: i.hostVethName } : {}),
        ...(d ? { hostIfName: d.hostIfName, deviceMac: d.mac } : {}),
      });
      if (i.shown) attachmentStore.commitInterface(row.generation, i.ifName, i.shown.mac, i.shown.ifIndex);
      if (d) devices.assign(d.id, interfaceId);
      for (const address of i.addresses) ipam.claim(address.poolId, address.address, interfaceId, nowMs);
    }
    return { generation: row.generation, ...(held ? { replacedGeneration: held.generation } : {}) };
  });
}
