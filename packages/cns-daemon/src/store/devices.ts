/** The devices table (delegated NIC inventory). Statements are prepared once; callers own transactions. */
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
  readonly #get;
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
      `INSERT INTO devices (mac, grp, host_if_name) VALUES (?, ?, ?)
       ON CONFLICT (mac) DO UPDATE SET grp = excluded.grp, host_if_name = coalesce(devices.host_if_name, excluded.host_if_name)`,
    );
    this.#get = db.prepare('SELECT * FROM devices WHERE mac = ?');
    this.#byHostIfName = db.prepare('SELECT * FROM devices WHERE host_if_name = ? ORDER BY mac LIMIT 1');
    this.#all = db.prepare(
      `SELECT d.*, i.container_id AS container_id, i.if_name AS if_name, a.state AS attachment_state,
         a.updated_at_ms AS attachment_updated_at_ms, a.pod_namespace AS pod_namespace, a.pod_name AS pod_name
       FROM devices d LEFT JOIN interfaces i ON i.id = d.interface_id LEFT JOIN attachments a ON a.generation = i.attachment_id
       ORDER BY d.grp, d.mac`,
    );
    this.#remove = db.prepare('DELETE FROM devices WHERE mac = ? AND interface_id IS NULL');
    this.#setPresence = db.prepare(
      'UPDATE devices SET present = ?, seen_at_ms = coalesce(?, seen_at_ms) WHERE mac = ?',
    );
    this.#assign = db.prepare('UPDATE devices SET interface_id = ? WHERE mac = ? AND interface_id IS NULL');
    this.#detach = db.prepare('UPDATE devices SET interface_id = NULL WHERE mac = ?');
    this.#freeOfGroup = db.prepare(
      `SELECT * FROM devices WHERE grp = ? AND present = 1 AND interface_id IS NULL AND reserved_pod IS NULL
       ORDER BY mac LIMIT ?`,
    );
    this.#reservedFor = db.prepare(
      'SELECT * FROM devices WHERE reserved_namespace = ? AND reserved_pod = ? ORDER BY mac',
    );
    this.#reserve = db.prepare(
      `UPDATE devices SET reserved_namespace = @namespace, reserved_pod = @pod, reserved_if_name = @ifName,
         reserved_json = @json WHERE mac = @mac`,
    );
    this.#unreserve = db.prepare(
      'UPDATE devices SET reserved_namespace = NULL, reserved_pod = NULL, reserved_if_name = NULL, reserved_json = NULL WHERE mac = ?',
    );
  }

  /** Makes sure a configured device has a row; its recorded host name is kept once known. */
  upsert(mac: string, group: string, hostIfName: string | undefined): void {
    this.#upsert.run(mac, group, hostIfName ?? null);
  }

  get(mac: string): DeviceRow | undefined {
    const row = this.#get.get(mac);
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
  remove(mac: string): boolean {
    return this.#remove.run(mac).changes === 1;
  }

  setPresence(mac: string, present: boolean, seenAtMs?: number): void {
    this.#setPresence.run(present ? 1 : 0, seenAtMs ?? null, mac);
  }

  /** Assigns a free device; false when it was taken meanwhile. */
  assign(mac: string, interfaceId: number): boolean {
    return this.#assign.run(interfaceId, mac).changes === 1;
  }

  /** The device came back to the node without a DEL: it no longer serves its interface. */
  detach(mac: string): void {
    this.#detach.run(mac);
  }

  freeOfGroup(group: string, limit: number): DeviceRow[] {
    return this.#freeOfGroup.all(group, limit).map((r) => parseRow(DeviceRowSchema, r, 'devices', isDeviceRow));
  }

  reservedFor(namespace: string, pod: string): DeviceRow[] {
    return this.#reservedFor.all(namespace, pod).map((r) => parseRow(DeviceRowSchema, r, 'devices', isDeviceRow));
  }

  reserve(mac: string, r: Reservation): boolean {
    return (
      this.#reserve.run({ mac, namespace: r.namespace, pod: r.pod, ifName: r.ifName ?? null, json: r.json ?? null })
        .changes === 1
    );
  }

  unreserve(mac: string): boolean {
    return this.#unreserve.run(mac).changes === 1;
  }
}
