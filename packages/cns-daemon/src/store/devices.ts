/**
 * The devices table (delegated NIC inventory), keyed by each device's identity (`deviceIdOf`). Statements
 * are prepared once; callers own transactions.
 */
import type { Db } from './db';
import { isAssignmentRow, isDeviceRow } from './row-checks';
import { AssignmentRowSchema, type DeviceRow, DeviceRowSchema, type DeviceWithAssignment, parseRow } from './rows';

export type { DeviceWithAssignment } from './rows';

export interface Reservation {
  namespace: string;
  pod: string;
  ifName?: string;
  json?: string;
}

export class DeviceStore {
  readonly #upsert;
  readonly #rekey;
  readonly #get;
  readonly #byMac;
  readonly #ofInterface;
  readonly #byHostIfName;
  readonly #all;
  readonly #remove;
  readonly #setPresence;
  readonly #assign;
  readonly #detach;
  readonly #freeOfGroup;
  readonly #reservedFor;
  readonly #reserve;
  readonly #unreserve;

  constructor(db: Db) {
    this.#upsert = db.prepare(
      `INSERT INTO devices (id, mac, grp, host_if_name) VALUES (?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET grp = excluded.grp, mac = coalesce(excluded.mac, devices.mac),
         host_if_name = coalesce(devices.host_if_name, excluded.host_if_name)`,
    );
    this.#rekey = db.prepare('UPDATE devices SET id = ? WHERE id = ?');
    this.#get = db.prepare('SELECT * FROM devices WHERE id = ?');
    this.#byMac = db.prepare('SELECT * FROM devices WHERE mac = ? ORDER BY id');
    this.#ofInterface = db.prepare('SELECT * FROM devices WHERE interface_id = ?');
    this.#byHostIfName = db.prepare('SELECT * FROM devices WHERE host_if_name = ? ORDER BY id LIMIT 1');
    this.#all = db.prepare(
      `SELECT d.*, i.container_id AS container_id, i.if_name AS if_name, a.state AS attachment_state,
         a.updated_at_ms AS attachment_updated_at_ms, a.pod_namespace AS pod_namespace, a.pod_name AS pod_name
       FROM devices d LEFT JOIN interfaces i ON i.id = d.interface_id LEFT JOIN attachments a ON a.generation = i.attachment_id
       ORDER BY d.grp, d.id`,
    );
    this.#remove = db.prepare('DELETE FROM devices WHERE id = ? AND interface_id IS NULL');
    this.#setPresence = db.prepare(
      'UPDATE devices SET present = ?, seen_at_ms = coalesce(?, seen_at_ms), mac = coalesce(?, mac) WHERE id = ?',
    );
    this.#assign = db.prepare('UPDATE devices SET interface_id = ? WHERE id = ? AND interface_id IS NULL');
    this.#detach = db.prepare('UPDATE devices SET interface_id = NULL WHERE id = ?');
    this.#freeOfGroup = db.prepare(
      `SELECT * FROM devices WHERE grp = ? AND present = 1 AND interface_id IS NULL AND reserved_pod IS NULL
       ORDER BY id LIMIT ?`,
    );
    this.#reservedFor = db.prepare(
      'SELECT * FROM devices WHERE reserved_namespace = ? AND reserved_pod = ? ORDER BY id',
    );
    this.#reserve = db.prepare(
      `UPDATE devices SET reserved_namespace = @namespace, reserved_pod = @pod, reserved_if_name = @ifName,
         reserved_json = @json WHERE id = @id`,
    );
    this.#unreserve = db.prepare(
      'UPDATE devices SET reserved_namespace = NULL, reserved_pod = NULL, reserved_if_name = NULL, reserved_json = NULL WHERE id = ?',
    );
  }

  /** Makes sure a configured device has a row; its recorded host name is kept once known. */
  upsert(id: string, mac: string | undefined, group: string, hostIfName: string | undefined): void {
    this.#upsert.run(id, mac ?? null, group, hostIfName ?? null);
  }

  /** The row keyed `from` (a MAC) is now keyed `to` (its PCI address), everything else kept. */
  rekey(from: string, to: string): boolean {
    return this.#rekey.run(to, from).changes === 1;
  }

  get(id: string): DeviceRow | undefined {
    const row = this.#get.get(id);
    return row === undefined ? undefined : parseRow(DeviceRowSchema, row, 'devices', isDeviceRow);
  }

  /** The devices last seen with this MAC (more than one: VFs that share a MAC). */
  byMac(mac: string): DeviceRow[] {
    return this.#byMac.all(mac).map((r) => parseRow(DeviceRowSchema, r, 'devices', isDeviceRow));
  }

  /** The device an interface holds. */
  ofInterface(interfaceId: number): DeviceRow | undefined {
    const row = this.#ofInterface.get(interfaceId);
    return row === undefined ? undefined : parseRow(DeviceRowSchema, row, 'devices', isDeviceRow);
  }

  /** The device whose recorded host name is `name` (how a netdev sysfs names is found in the inventory). */
  byHostIfName(name: string): DeviceRow | undefined {
    const row = this.#byHostIfName.get(name);
    return row === undefined ? undefined : parseRow(DeviceRowSchema, row, 'devices', isDeviceRow);
  }

  all(): DeviceWithAssignment[] {
    return this.#all.all().map((r) => parseRow(AssignmentRowSchema, r, 'devices', isAssignmentRow));
  }

  /** Drops a device no longer in the config, unless a pod still holds it. */
  remove(id: string): boolean {
    return this.#remove.run(id).changes === 1;
  }

  /** `seen`: when and with which MAC it was seen on the node now (none: not seen by this look). */
  setPresence(id: string, present: boolean, seen?: { atMs: number; mac: string }): void {
    this.#setPresence.run(present ? 1 : 0, seen?.atMs ?? null, seen?.mac ?? null, id);
  }

  /** Assigns a free device; false when it was taken meanwhile. */
  assign(id: string, interfaceId: number): boolean {
    return this.#assign.run(interfaceId, id).changes === 1;
  }

  /** The device came back to the node without a DEL: it no longer serves its interface. */
  detach(id: string): void {
    this.#detach.run(id);
  }

  freeOfGroup(group: string, limit: number): DeviceRow[] {
    return this.#freeOfGroup.all(group, limit).map((r) => parseRow(DeviceRowSchema, r, 'devices', isDeviceRow));
  }

  reservedFor(namespace: string, pod: string): DeviceRow[] {
    return this.#reservedFor.all(namespace, pod).map((r) => parseRow(DeviceRowSchema, r, 'devices', isDeviceRow));
  }

  reserve(id: string, r: Reservation): boolean {
    return (
      this.#reserve.run({ id, namespace: r.namespace, pod: r.pod, ifName: r.ifName ?? null, json: r.json ?? null })
        .changes === 1
    );
  }

  unreserve(id: string): boolean {
    return this.#unreserve.run(id).changes === 1;
  }
}
