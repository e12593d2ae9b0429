/** The attachments and interfaces tables. Statements are prepared once; callers own transactions. */

import type { Db } from './db';
import { isAttachmentRow, isInterfaceCount, isInterfaceRow } from './row-checks';
import {
  type AttachmentRow,
  AttachmentRowSchema,
  type InterfaceCount,
  InterfaceCountSchema,
  type InterfaceRow,
  InterfaceRowSchema,
  parseRow,
  type StaticAddressesRow,
  StaticAddressesRowSchema,
} from './rows';

export type { InterfaceCount } from './rows';

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
  /** A userspace device's PCI address (it has no host name and no MAC). */
  userspacePciAddress?: string;
}

export class AttachmentStore {
  readonly #insertAttachment;
  readonly #getAttachment;
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
  readonly #staticAddresses;

  constructor(db: Db) {
    this.#insertAttachment = db.prepare(
      `INSERT INTO attachments (network, container_id, if_name, netns, pod_namespace, pod_name, pod_uid,
         pod_infra_container_id, state, created_at_ms, updated_at_ms)
       VALUES (@network, @container_id, @if_name, @netns, @pod_namespace, @pod_name, @pod_uid,
         @pod_infra_container_id, @state, @created_at_ms, @updated_at_ms)`,
    );
    this.#getAttachment = db.prepare('SELECT * FROM attachments WHERE container_id = ? AND if_name = ?');
    this.#attachmentsOfContainer = db.prepare('SELECT * FROM attachments WHERE container_id = ?');
    this.#attachmentsOfNetwork = db.prepare('SELECT * FROM attachments WHERE network = ? ORDER BY generation');
    this.#allAttachments = db.prepare('SELECT * FROM attachments ORDER BY generation');
    this.#commitAttachment = db.prepare(
      `UPDATE attachments SET state = 'committed', updated_at_ms = ? WHERE generation = ?`,
    );
    this.#touchAttachment = db.prepare('UPDATE attachments SET updated_at_ms = ? WHERE generation = ?');
    this.#deleteAttachment = db.prepare('DELETE FROM attachments WHERE generation = ?');
    this.#insertInterface = db.prepare(
      `INSERT INTO interfaces (attachment_id, position, container_id, if_name, endpoint_id, nic_type, routes_json,
         host_veth_name, host_if_name, device_mac, static_addresses_json, userspace_pci_address)
       VALUES (@attachmentId, @position, @containerId, @ifName, @endpointId, @nicType, @routesJson,
         @hostVethName, @hostIfName, @deviceMac, @staticAddressesJson, @userspacePciAddress)`,
    );
    this.#interfacesOfAttachment = db.prepare('SELECT * FROM interfaces WHERE attachment_id = ?');
    this.#interfacesOfContainer = db.prepare(
      'SELECT * FROM interfaces WHERE container_id = ? ORDER BY attachment_id, position',
    );
    this.#commitInterface = db.prepare(
      'UPDATE interfaces SET mac = ?, container_if_index = ? WHERE attachment_id = ? AND if_name = ?',
    );
    this.#staticAddresses = db.prepare(
      `SELECT i.static_addresses_json AS json, a.pod_namespace AS pod_namespace, a.pod_name AS pod_name
       FROM interfaces i JOIN attachments a ON a.generation = i.attachment_id WHERE i.static_addresses_json IS NOT NULL`,
    );
    this.#countInterfaces = db.prepare(
      `SELECT a.network AS network, i.nic_type AS nicType, count(*) AS n
       FROM interfaces i JOIN attachments a ON a.generation = i.attachment_id GROUP BY a.network, i.nic_type`,
    );
  }

  /** Inserts an attachment in state `allocated`; returns the row as written, with its new generation. */
  insertAttachment(a: NewAttachment): AttachmentRow {
    const row: Omit<AttachmentRow, 'generation'> = {
      network: a.network,
      container_id: a.containerId,
      if_name: a.ifName,
      netns: a.netns,
      pod_namespace: a.podNamespace ?? null,
      pod_name: a.podName ?? null,
      pod_uid: a.podUid ?? null,
      pod_infra_container_id: a.podInfraContainerId ?? null,
      state: 'allocated',
      created_at_ms: a.nowMs,
      updated_at_ms: a.nowMs,
      adopted_at_ms: null,
    };
    return { generation: Number(this.#insertAttachment.run(row).lastInsertRowid), ...row };
  }

  getAttachment(containerId: string, ifName: string): AttachmentRow | undefined {
    const row = this.#getAttachment.get(containerId, ifName);
    return row === undefined ? undefined : parseRow(AttachmentRowSchema, row, 'attachments', isAttachmentRow);
  }

  /** Oldest first (sorted here: the index is by ifName, and an ORDER BY would sort in a temporary B-tree). */
  attachmentsOfContainer(containerId: string): AttachmentRow[] {
    return this.#attachmentsOfContainer
      .all(containerId)
      .map((r) => parseRow(AttachmentRowSchema, r, 'attachments', isAttachmentRow))
      .sort((a, b) => a.generation - b.generation);
  }

  attachmentsOfNetwork(network: string): AttachmentRow[] {
    return this.#attachmentsOfNetwork
      .all(network)
      .map((r) => parseRow(AttachmentRowSchema, r, 'attachments', isAttachmentRow));
  }

  allAttachments(): AttachmentRow[] {
    return this.#allAttachments.all().map((r) => parseRow(AttachmentRowSchema, r, 'attachments', isAttachmentRow));
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
      userspacePciAddress: i.userspacePciAddress ?? null,
    });
    return Number(info.lastInsertRowid);
  }

  /** In position order (sorted here: an ORDER BY would sort through a temporary B-tree). */
  interfacesOf(attachmentId: number): InterfaceRow[] {
    return this.#interfacesOfAttachment
      .all(attachmentId)
      .map((r) => parseRow(InterfaceRowSchema, r, 'interfaces', isInterfaceRow))
      .sort((a, b) => a.position - b.position);
  }

  interfacesOfContainer(containerId: string): InterfaceRow[] {
    return this.#interfacesOfContainer
      .all(containerId)
      .map((r) => parseRow(InterfaceRowSchema, r, 'interfaces', isInterfaceRow));
  }

  /** Records what only the shim knows; returns false when the interface is not part of the attachment. */
  /** No MAC and no ifindex: a userspace device, which has no netdev in the pod. */
  commitInterface(
    attachmentId: number,
    ifName: string,
    mac: string | undefined,
    containerIfIndex: number | undefined,
  ): boolean {
    return this.#commitInterface.run(mac ?? null, containerIfIndex ?? null, attachmentId, ifName).changes === 1;
  }

  /** Every interface's static addresses (their stored text), with the pod that holds them. */
  staticAddresses(): StaticAddressesRow[] {
    return this.#staticAddresses.all().map((r) => parseRow(StaticAddressesRowSchema, r, 'interfaces'));
  }

  countInterfaces(): InterfaceCount[] {
    return this.#countInterfaces.all().map((r) => parseRow(InterfaceCountSchema, r, 'interfaces', isInterfaceCount));
  }
}
