/**
 * The store's invariants, checked by SQL over the whole database: every Assigned address has an
 * endpoint and every InfraNIC has an address per family of its network; no address is held twice; no
 * attachment is empty; every address lies in its pool; no device serves two interfaces. Written once: the kill -9 tests and
 * `ferryctl doctor` both call it (through GET /v1/operator/invariants).
 */
import type { Violation } from '@ferry/shared-types/api/operator';
import * as z from 'zod/mini';
import { contains, parseCidr, toBigInt } from '../ipam/cidr';
import type { Ipam } from '../ipam/ipam';
import type { Db } from './db';
import { parseRow } from './rows';

const OrphanAddressSchema = z.object({ address: z.string(), interface_id: z.nullable(z.number()) });
const BareInterfaceSchema = z.object({
  container_id: z.string(),
  if_name: z.string(),
  network: z.string(),
  family: z.number(),
});
const DuplicateSchema = z.object({ address: z.string(), n: z.number() });
const EmptyAttachmentSchema = z.object({ container_id: z.string(), if_name: z.string() });
const PooledAddressSchema = z.object({ address: z.string(), subnet: z.string() });
const SharedDeviceSchema = z.object({ device_mac: z.string(), n: z.number() });

export class Invariants {
  readonly #db: Db;
  readonly #ipam: Ipam;

  constructor(db: Db, ipam: Ipam) {
    this.#db = db;
    this.#ipam = ipam;
  }

  check(): Violation[] {
    const db = this.#db;
    const out: Violation[] = [];
    for (const r of db
      .prepare(
        `SELECT a.address, a.interface_id FROM addresses a LEFT JOIN interfaces i ON i.id = a.interface_id
         WHERE a.state = 'Assigned' AND i.id IS NULL`,
      )
      .all()) {
      const row = parseRow(OrphanAddressSchema, r, 'addresses');
      out.push({
        kind: 'address-without-endpoint',
        subject: row.address,
        msg: `Assigned to missing interface ${row.interface_id}`,
      });
    }
    // Every InfraNIC must hold one address per family its network serves.
    for (const net of this.#ipam.networks()) {
      for (const { spec } of net.pools) {
        for (const r of db
          .prepare(
            `SELECT i.container_id, i.if_name, t.network, ? AS family FROM interfaces i
             JOIN attachments t ON t.generation = i.attachment_id
             WHERE t.network = ? AND i.nic_type = 'InfraNIC' AND NOT EXISTS (
               SELECT 1 FROM addresses a JOIN pools p ON p.id = a.pool_id
               WHERE a.interface_id = i.id AND p.family = ?)`,
          )
          .all(spec.family, spec.network, spec.family)) {
          const row = parseRow(BareInterfaceSchema, r, 'interfaces');
          out.push({
            kind: 'endpoint-without-address',
            subject: `${row.container_id}/${row.if_name}`,
            msg: `InfraNIC on network "${row.network}" holds no IPv${row.family} address`,
          });
        }
      }
    }
    for (const r of db.prepare('SELECT address, count(*) AS n FROM addresses GROUP BY address HAVING n > 1').all()) {
      const row = parseRow(DuplicateSchema, r, 'addresses');
      out.push({ kind: 'address-twice', subject: row.address, msg: `stored ${row.n} times` });
    }
    for (const r of db
      .prepare(
        'SELECT container_id, if_name FROM attachments t WHERE NOT EXISTS (SELECT 1 FROM interfaces i WHERE i.attachment_id = t.generation)',
      )
      .all()) {
      const row = parseRow(EmptyAttachmentSchema, r, 'attachments');
      out.push({
        kind: 'attachment-without-interfaces',
        subject: `${row.container_id}/${row.if_name}`,
        msg: 'no interface rows',
      });
    }
    for (const r of db.prepare('SELECT a.address, p.subnet FROM addresses a JOIN pools p ON p.id = a.pool_id').all()) {
      const row = parseRow(PooledAddressSchema, r, 'addresses');
      if (!contains(parseCidr(row.subnet), toBigInt(row.address))) {
        out.push({ kind: 'address-outside-pool', subject: row.address, msg: `not inside its pool ${row.subnet}` });
      }
    }
    // Two pod interfaces recorded on one device: the device can be in one pod only.
    for (const r of db
      .prepare(
        `SELECT device_mac, count(*) AS n FROM interfaces WHERE nic_type = 'DelegatedNIC' AND device_mac IS NOT NULL
         GROUP BY device_mac HAVING n > 1`,
      )
      .all()) {
      const row = parseRow(SharedDeviceSchema, r, 'interfaces');
      out.push({ kind: 'device-twice', subject: row.device_mac, msg: `recorded on ${row.n} pod interfaces` });
    }
    return out;
  }
}
