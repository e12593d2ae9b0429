/**
 * The node is the second source of truth (docs/architecture.md "The node is the second source of
 * truth"): every InfraNIC's host veth carries a marker (shared-types/link-marker.ts) naming its
 * attachment and generation, and routes the pod's addresses (/32, /128). An attachment the database
 * does not hold — a new, empty, corrupt or restored database, lost WAL frames — or holds only in an
 * older generation than the node shows, is rebuilt from them ("adopted"): its addresses are held again,
 * the delegated devices found in its pod are in use, a DEL releases it.
 *
 * One pass: the node is read as plain data, outside any transaction (node-reading.ts); a pure function
 * decides what to adopt from that reading and the database (adoption-decision.ts, which says whom it
 * trusts for what); Attachments.adopt writes the plan in one transaction, as the one writer of
 * attachment state. Runs in every reconcile pass (so once before ready). An attachment whose release was
 * asked for since a little before the pass (Attachments.releaseAskedSince) is not brought back: a DEL
 * deletes the veth before it releases, CNI GC releases before the shim deletes. An adopted attachment
 * whose host veth is gone (its pod is) is released by the next pass.
 *
 * A secondary network's attachment (infraNIC: false) has no host veth: its device, in the pod, is the
 * attachment and its marker names the key and generation. Those are found in the pods this pass reads
 * (those of host veths it adopts: a database that lost them lost their pods' secondary attachments too).
 */
import type { Ip } from '@ferry/net';
import type { Logger } from 'pino';
import type { AdoptedAttachment, AdoptionWritten } from '../attachments/adoption-plan';
import type { Attachments } from '../attachments/attachments';
import type { Ipam } from '../ipam/ipam';
import type { AdoptedStore } from '../store/adopted';
import type { AttachmentStore } from '../store/attachments';
import { type Db, transactionRunner } from '../store/db';
import type { DeviceStore } from '../store/devices';
import { type AdoptionFacts, decideAdoption, type Note } from './adoption-decision';
import { readNode } from './node-reading';

/** A release asked for this long before a pass still keeps its attachment from being adopted. */
const RELEASE_MEMORY_MS = 30_000;

export interface AdoptionDeps {
  db: Db;
  attachmentStore: AttachmentStore;
  adopted: AdoptedStore;
  devices: DeviceStore;
  ipam: Ipam;
  attachments: Attachments;
  ip: Ip;
  log: Logger;
  now: () => number;
  /** Counts adopted attachments (the metric). */
  onAdopted?: (n: number) => void;
}

export interface AdoptionResult {
  /** Attachments rebuilt from the node. */
  adopted: number;
  /** Of those, how many replaced an older generation the database held. */
  replaced: number;
  /** Delegated devices found in adopted pods and held for them (a secondary network's included). */
  devices: number;
  /** Adopted attachments released because their host veth is gone. */
  released: number;
}

export class Adoption {
  readonly #deps: AdoptionDeps;
  readonly #tx: <T>(fn: () => T) => T;
  /** Veths already reported as unusable, so each is logged once, not every pass. */
  readonly #reported = new Set<string>();

  constructor(deps: AdoptionDeps) {
    this.#deps = deps;
    this.#tx = transactionRunner(deps.db);
  }

  async pass(): Promise<AdoptionResult> {
    const { ip, ipam, attachments, attachmentStore, log } = this.#deps;
    const startedAt = this.#deps.now();
    const since = startedAt - RELEASE_MEMORY_MS;
    const reading = await readNode({
      ip,
      log,
      poolOf: (address) => ipam.poolOf(address),
      lacks: (containerId, ifName, generation) => {
        if (attachments.releaseAskedSince(containerId, ifName, since)) return false;
        const held = attachmentStore.getAttachment(containerId, ifName);
        return !held || held.generation < generation;
      },
      report: (veth, fields, msg) => this.#reportOnce(veth, fields, msg),
    });
    // The facts, the decision and the write in one transaction: nothing changes between them.
    const result = this.#tx(() => {
      const decision = decideAdoption(reading, this.#facts(), since);
      for (const n of decision.refused) log.warn(n.fields, n.msg);
      const written = attachments.adopt(decision.plan);
      return this.#report(decision.plan.attachments, written, decision.notes);
    });
    result.released = this.#releaseVanished(reading.nodeNames);
    attachments.forgetReleasesBefore(since);
    if (result.adopted > 0) {
      this.#deps.onAdopted?.(result.adopted);
      log.warn(
        { ...result, tookMs: this.#deps.now() - startedAt },
        'endpoints adopted from the node: the database did not hold them',
      );
    }
    return result;
  }

  #facts(): AdoptionFacts {
    const { attachmentStore, devices, ipam } = this.#deps;
    return {
      networks: ipam.networks(),
      held: (containerId, ifName) => {
        const a = attachmentStore.getAttachment(containerId, ifName);
        if (!a) return undefined;
        return { generation: a.generation, interfaceIds: attachmentStore.interfacesOf(a.generation).map((i) => i.id) };
      },
      otherIfNames: (containerId, ifName) => {
        const own = attachmentStore.getAttachment(containerId, ifName)?.generation;
        return attachmentStore
          .interfacesOfContainer(containerId)
          .filter((i) => i.attachment_id !== own)
          .map((i) => i.if_name);
      },
      device: (mac) => {
        const rows = devices.byMac(mac);
        return rows.length === 1 ? rows[0] : undefined;
      },
      holderOf: (poolId, address) => ipam.holderOf(poolId, address),
    };
  }

  /** Logs each written attachment and counts them. */
  #report(planned: readonly AdoptedAttachment[], written: readonly AdoptionWritten[], notes: Note[][]) {
    const { log } = this.#deps;
    const r: AdoptionResult = { adopted: 0, replaced: 0, devices: 0, released: 0 };
    for (const [k, a] of planned.entries()) {
      const w = written[k];
      if (!w) continue;
      for (const n of notes[k] ?? []) log.warn(n.fields, n.msg);
      const devices = a.interfaces.filter((i) => i.device).length;
      const addresses = a.interfaces.flatMap((i) => i.addresses.map((x) => x.address));
      r.adopted++;
      if (w.replacedGeneration !== undefined) r.replaced++;
      r.devices += devices;
      const replaced = w.replacedGeneration !== undefined ? { replacedGeneration: w.replacedGeneration } : {};
      const { containerId, ifName, network, netns } = a;
      if (a.interfaces[0]?.nicType === 'InfraNIC') {
        const fields = { containerId, ifName, network, generation: w.generation, netns: netns || undefined };
        log.warn(
          { ...fields, addresses, devices, ...replaced },
          w.replacedGeneration !== undefined
            ? 'endpoint adopted: the node holds a newer generation than the database'
            : 'endpoint adopted from the node',
        );
      } else {
        const device = a.interfaces[0]?.device?.mac;
        log.warn(
          { network, containerId, generation: a.generation, ifName, netns, device, addresses },
          'secondary network endpoint adopted from its device in the pod',
        );
      }
    }
    return r;
  }

  /** Adopted attachments whose host veth has gone (the pod with it): released now, as a DEL would. */
  #releaseVanished(present: ReadonlySet<string>): number {
    const { adopted, attachmentStore, attachments, log } = this.#deps;
    let released = 0;
    for (const a of adopted.adopted()) {
      const infra = attachmentStore.interfacesOf(a.generation).find((i) => i.nic_type === 'InfraNIC');
      if (!infra?.host_veth_name || present.has(infra.host_veth_name)) continue;
      attachments.release(a.container_id, a.network, a.if_name, a.generation);
      released++;
      log.info(
        { containerId: a.container_id, ifName: a.if_name, hostVethName: infra.host_veth_name },
        'adopted endpoint released: its host veth is gone',
      );
    }
    return released;
  }

  #reportOnce(veth: string, fields: Record<string, unknown>, msg: string): void {
    if (this.#reported.has(veth)) return;
    this.#reported.add(veth);
    this.#deps.log.warn({ hostVethName: veth, ...fields }, msg);
  }
}
