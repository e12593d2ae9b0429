/** The attachments and interfaces tables. Statements are prepared once; callers own transactions. */

import * as z from 'zod/mini';
import type { Db } from './db';
import { type AttachmentRow, AttachmentRowSchema, type InterfaceRow, InterfaceRowSchema, parseRow } from './rows';

const InterfaceCountSchema = z.object({ network: z.string(), nicType: z.string(), n: z.number() });
export type InterfaceCount = z.infer<typeof InterfaceCountSchema>;

export interface NewAttachment {
  network: string;
  containerId: string;
  ifName: string;
  netns: string;
  podNamespace?: string;
  podName?: string;
  podUid?: string;
  podInfraContainerId?: string;
  nowMs: number;
}

export interface NewInterface {
  attachmentId: number;
  position: number;
  containerId: string;
  ifName: string;
  endpointId: string;
  nicType: 'InfraNIC' | 'DelegatedNIC';
  routesJson: string;
  hostVethName?: string;
  hostIfName?: string;
  deviceMac?: string;
  staticAddressesJson?: string;
}

export class EndpointStore {
  readonly #insertAttachment;
  readonly #getAttachment;
  readonly #getAttachmentById;
  readonly #attachmentsOfContainer;
  readonly #attachmentsOfNetwork;
  readonly #allAttachments;
  readonly #commitAttachment;
  readonly #touchAttachment;
  readonly #deleteAttachment;
  readonly #insertInterface;
  readonly #interfacesOfAttachment;
  readonly #interfacesOfContainer;
  readonly #commitInterface;
  readonly #countInterfaces;

  constructor(db: Db) {
    this.#insertAttachment = db.prepare(
      `INSERT INTO attachments (network, container_id, if_name, netns, pod_namespace, pod_name, pod_uid,
         pod_infra_container_id, state, created_at_ms, updated_at_ms)
       VALUES (@network, @containerId, @ifName, @netns, @podNamespace, @podName, @podUid, @podInfraContainerId,
         'allocated', @nowMs, @nowMs)`,
    );
    this.#getAttachment = db.prepare('SELECT * FROM attachments WHERE container_id = ? AND if_name = ?');
    this.#getAttachmentById = db.prepare('SELECT * FROM attachments WHERE id = ?');
    this.#attachmentsOfContainer = db.prepare('SELECT * FROM attachments WHERE container_id = ? ORDER BY id');
    this.#attachmentsOfNetwork = db.prepare('SELECT * FROM attachments WHERE network = ? ORDER BY id');
    this.#allAttachments = db.prepare('SELECT * FROM attachments ORDER BY id');
    this.#commitAttachment = db.prepare(`UPDATE attachments SET state = 'committed', updated_at_ms = ? WHERE id = ?`);
    this.#touchAttachment = db.prepare('UPDATE attachments SET updated_at_ms = ? WHERE id = ?');
    this.#deleteAttachment = db.prepare('DELETE FROM attachments WHERE id = ?');
    this.#insertInterface = db.prepare(
      `INSERT INTO interfaces (attachment_id, position, container_id, if_name, endpoint_id, nic_type, routes_json,
         host_veth_name, host_if_name, device_mac, static_addresses_json)
       VALUES (@attachmentId, @position, @containerId, @ifName, @endpointId, @nicType, @routesJson,
         @hostVethName, @hostIfName, @deviceMac, @staticAddressesJson)`,
    );
    this.#interfacesOfAttachment = db.prepare('SELECT * FROM interfaces WHERE attachment_id = ? ORDER BY position');
    this.#interfacesOfContainer = db.prepare(
      'SELECT * FROM interfaces WHERE container_id = ? ORDER BY attachment_id, position',
    );
    this.#commitInterface = db.prepare(
      'UPDATE interfaces SET mac = ?, container_if_index = ? WHERE attachment_id = ? AND if_name = ?',
    );
    this.#countInterfaces = db.prepare(
      `SELECT a.network AS network, i.nic_type AS nicType, count(*) AS n
       FROM interfaces i JOIN attachments a ON a.id = i.attachment_id GROUP BY a.network, i.nic_type`,
    );
  }

  /** Inserts an attachment in state `allocated`; returns its id (= generation). */
  insertAttachment(a: NewAttachment): number {
    const info = this.#insertAttachment.run({
      network: a.network,
      containerId: a.containerId,
      ifName: a.ifName,
      netns: a.netns,
      podNamespace: a.podNamespace ?? null,
      podName: a.podName ?? null,
      podUid: a.podUid ?? null,
      podInfraContainerId: a.podInfraContainerId ?? null,
      nowMs: a.nowMs,
    });
    return Number(info.lastInsertRowid);
  }

  getAttachment(containerId: string, ifName: string): AttachmentRow | undefined {
    const row = this.#getAttachment.get(containerId, ifName);
    return row === undefined ? undefined : parseRow(AttachmentRowSchema, row, 'attachments');
  }

  getAttachmentById(id: number): AttachmentRow | undefined {
    const row = this.#getAttachmentById.get(id);
    return row === undefined ? undefined : parseRow(AttachmentRowSchema, row, 'attachments');
  }

  attachmentsOfContainer(containerId: string): AttachmentRow[] {
    return this.#attachmentsOfContainer.all(containerId).map((r) => parseRow(AttachmentRowSchema, r, 'attachments'));
  }

  attachmentsOfNetwork(network: string): AttachmentRow[] {
    return this.#attachmentsOfNetwork.all(network).map((r) => parseRow(AttachmentRowSchema, r, 'attachments'));
  }

  allAttachments(): AttachmentRow[] {
    return this.#allAttachments.all().map((r) => parseRow(AttachmentRowSchema, r, 'attachments'));
  }

  markCommitted(attachmentId: number, nowMs: number): void {
    this.#commitAttachment.run(nowMs, attachmentId);
  }

  /** Records that an ADD took the attachment up again (a queued DEL older than this leaves it alone). */
  touch(attachmentId: number, nowMs: number): void {
    this.#touchAttachment.run(nowMs, attachmentId);
  }

  /** Deletes the attachment; its interfaces go with it (ON DELETE CASCADE). */
  deleteAttachment(attachmentId: number): void {
    this.#deleteAttachment.run(attachmentId);
  }

  insertInterface(i: NewInterface): number {
    const info = this.#insertInterface.run({
      ...i,
      hostVethName: i.hostVethName ?? null,
      hostIfName: i.hostIfName ?? null,
      deviceMac: i.deviceMac ?? null,
      staticAddressesJson: i.staticAddressesJson ?? null,
    });
    return Number(info.lastInsertRowid);
  }

  interfacesOf(attachmentId: number): InterfaceRow[] {
    return this.#interfacesOfAttachment.all(attachmentId).map((r) => parseRow(InterfaceRowSchema, r, 'interfaces'));
  }

  interfacesOfContainer(containerId: string): InterfaceRow[] {
    return this.#interfacesOfContainer.all(containerId).map((r) => parseRow(InterfaceRowSchema, r, 'interfaces'));
  }

  /** Records what only the shim knows; returns false when the interface is not part of the attachment. */
  commitInterface(attachmentId: number, ifName: string, mac: string, containerIfIndex: number): boolean {
    return this.#commitInterface.run(mac, containerIfIndex, attachmentId, ifName).changes === 1;
  }

  countInterfaces(): InterfaceCount[] {
    return this.#countInterfaces.all().map((r) => parseRow(InterfaceCountSchema, r, 'interfaces'));
  }
}
