/** The pools and addresses tables. Statements are prepared once; callers own transactions. */
import type { Db } from './db';
import {
  isAddressListRow,
  isAddressRow,
  isCount,
  isCursor,
  isFamilyAddressRow,
  isPoolRow,
  isStateCount,
} from './row-checks';
import {
  type AddressListRow,
  AddressListRowSchema,
  type AddressRow,
  AddressRowSchema,
  CountSchema,
  CursorSchema,
  FamilyAddressRowSchema,
  type PoolRow,
  PoolRowSchema,
  parseRow,
  StateCountSchema,
} from './rows';

export type { AddressListRow } from './rows';

export class PoolStore {
  readonly #getPool;
  readonly #allPools;
  readonly #insertPool;
  readonly #updatePoolSubnet;
  readonly #countAddressesOfPool;
  readonly #setCursor;
  readonly #cursorOf;
  readonly #hasAddress;
  readonly #assign;
  readonly #addressesOfInterface;
  readonly #releaseInterface;
  readonly #sweep;
  readonly #countByState;
  readonly #countHeld;
  readonly #sweepPool;
  readonly #list;
  readonly #rowAt;
  readonly #claim;
  readonly #dropCooling;
  readonly #offsetsDesc;
  readonly #moveOffset;
  readonly #rebase;

  constructor(db: Db) {
    this.#getPool = db.prepare('SELECT * FROM pools WHERE network = ? AND family = ?');
    this.#allPools = db.prepare('SELECT * FROM pools ORDER BY id');
    this.#insertPool = db.prepare('INSERT INTO pools (network, family, subnet) VALUES (?, ?, ?)');
    this.#updatePoolSubnet = db.prepare('UPDATE pools SET subnet = ?, cursor_hex = NULL WHERE id = ?');
    this.#countAddressesOfPool = db.prepare('SELECT count(*) AS n FROM addresses WHERE pool_id = ?');
    this.#setCursor = db.prepare('UPDATE pools SET cursor_hex = ? WHERE id = ?');
    this.#cursorOf = db.prepare('SELECT cursor_hex FROM pools WHERE id = ?').pluck();
    this.#hasAddress = db.prepare('SELECT 1 FROM addresses WHERE pool_id = ? AND offset_hex = ?').pluck();
    this.#assign = db.prepare(
      `INSERT INTO addresses (pool_id, offset_hex, address, state, interface_id, since_ms, available_at_ms)
       VALUES (?, ?, ?, 'Assigned', ?, ?, NULL)`,
    );
    this.#addressesOfInterface = db.prepare(
      'SELECT a.*, p.family AS family FROM addresses a JOIN pools p ON p.id = a.pool_id WHERE a.interface_id = ?',
    );
    this.#releaseInterface = db.prepare(
      `UPDATE addresses SET state = 'PendingRelease', interface_id = NULL, since_ms = ?, available_at_ms = ?
       WHERE interface_id = ?`,
    );
    this.#sweep = db.prepare(`DELETE FROM addresses WHERE state = 'PendingRelease' AND available_at_ms <= ?`);
    // Offsets are fixed-width lowercase hex, so text order is numeric order.
    this.#countHeld = db.prepare(
      `SELECT count(*) AS n FROM addresses WHERE pool_id = ? AND offset_hex BETWEEN ? AND ?
         AND (state = 'Assigned' OR available_at_ms > ?)`,
    );
    this.#sweepPool = db.prepare(
      `DELETE FROM addresses WHERE pool_id = ? AND state = 'PendingRelease' AND available_at_ms <= ?`,
    );
    this.#countByState = db.prepare(
      `SELECT pool_id, state, count(*) AS n FROM addresses WHERE state = 'Assigned' OR available_at_ms > ?
       GROUP BY pool_id, state`,
    );
    this.#list = db.prepare(
      `SELECT a.*, p.network AS network, p.family AS family, i.container_id AS container_id, i.if_name AS if_name
       FROM addresses a JOIN pools p ON p.id = a.pool_id LEFT JOIN interfaces i ON i.id = a.interface_id
       WHERE (@network IS NULL OR p.network = @network) AND (@state IS NULL OR a.state = @state)
         AND (a.state = 'Assigned' OR a.available_at_ms > @nowMs)
       ORDER BY p.network, p.family, a.offset_hex`,
    );
    this.#rowAt = db.prepare('SELECT * FROM addresses WHERE pool_id = ? AND offset_hex = ?');
    this.#claim = db.prepare(
      `INSERT INTO addresses (pool_id, offset_hex, address, state, interface_id, since_ms, available_at_ms)
       VALUES (@poolId, @offsetHex, @address, 'Assigned', @interfaceId, @nowMs, NULL)
       ON CONFLICT (pool_id, offset_hex) DO UPDATE SET state = 'Assigned', interface_id = excluded.interface_id,
         since_ms = excluded.since_ms, available_at_ms = NULL`,
    );
    this.#dropCooling = db.prepare(`DELETE FROM addresses WHERE state = 'PendingRelease'`);
    this.#offsetsDesc = db
      .prepare('SELECT offset_hex FROM addresses WHERE pool_id = ? ORDER BY offset_hex DESC')
      .pluck();
    this.#moveOffset = db.prepare('UPDATE addresses SET offset_hex = ? WHERE pool_id = ? AND offset_hex = ?');
    // One change, one transaction: a pool is never half re-based.
    this.#rebase = db.transaction((poolId: number, subnet: string, shift: (hex: string) => string) => {
      // From the highest offset down, each row moves past every row not moved yet: the key never collides.
      for (const hex of this.#offsetsDesc.all(poolId)) {
        if (typeof hex !== 'string') throw new Error(`corrupt addresses row: offset ${String(hex)}`);
        this.#moveOffset.run(shift(hex), poolId, hex);
      }
      const cursor = this.cursorOf(poolId);
      this.#updatePoolSubnet.run(subnet, poolId);
      if (cursor !== null) this.setCursor(poolId, shift(cursor));
    });
  }

  /**
   * Moves the pool to `subnet`, a prefix containing the old one, keeping every address: each row's offset
   * is shifted (`shift`: old offset → the same address's offset from the new base). Addresses of live
   * pods do not change; only how they are stored does.
   */
  rebase(poolId: number, subnet: string, shift: (hex: string) => string): void {
    this.#rebase(poolId, subnet, shift);
  }

  /** The row of one address (Assigned, or PendingRelease not yet swept); undefined when it is Available. */
  rowAt(poolId: number, offsetHex: string): AddressRow | undefined {
    const row = this.#rowAt.get(poolId, offsetHex);
    return row === undefined ? undefined : parseRow(AddressRowSchema, row, 'addresses', isAddressRow);
  }

  /**
   * Assigns one particular address to an interface whatever its row says (the node showed it in use:
   * Ipam.claim for Attachments.adopt); the caller has read the row before, to say whose it was.
   */
  claim(poolId: number, offsetHex: string, address: string, interfaceId: number, nowMs: number): void {
    this.#claim.run({ poolId, offsetHex, address, interfaceId, nowMs });
  }

  /** Every cooling address becomes Available at once (after a reboot nothing can still use one). */
  dropCooling(): number {
    return this.#dropCooling.run().changes;
  }

  getPool(network: string, family: 4 | 6): PoolRow | undefined {
    const row = this.#getPool.get(network, family);
    return row === undefined ? undefined : parseRow(PoolRowSchema, row, 'pools', isPoolRow);
  }

  allPools(): PoolRow[] {
    return this.#allPools.all().map((r) => parseRow(PoolRowSchema, r, 'pools', isPoolRow));
  }

  /** Rows of the pool in any state (assigned or cooling down). */
  countRows(poolId: number): number {
    return parseRow(CountSchema, this.#countAddressesOfPool.get(poolId), 'addresses', isCount).n;
  }

  /**
   * Makes sure the pool row exists with `subnet`. A subnet change is accepted only while the pool holds
   * no address: renumbering under live pods would hand their addresses to others.
   */
  ensurePool(network: string, family: 4 | 6, subnet: string): PoolRow | { conflict: string; held: number } {
    const existing = this.getPool(network, family);
    if (!existing) {
      const id = Number(this.#insertPool.run(network, family, subnet).lastInsertRowid);
      return { id, network, family, subnet, cursor_hex: null };
    }
    if (existing.subnet === subnet) return existing;
    const held = this.countRows(existing.id);
    if (held > 0) return { conflict: existing.subnet, held };
    this.#updatePoolSubnet.run(subnet, existing.id);
    return { ...existing, subnet, cursor_hex: null };
  }

  setCursor(poolId: number, offsetHex: string): void {
    this.#setCursor.run(offsetHex, poolId);
  }

  /** The offset handed out last (null before the first allocation). */
  cursorOf(poolId: number): string | null {
    return parseRow(CursorSchema, this.#cursorOf.get(poolId) ?? null, 'pools', isCursor);
  }

  /** Whether the offset has a row (Assigned, or PendingRelease not yet swept). */
  hasAddress(poolId: number, offsetHex: string): boolean {
    return this.#hasAddress.get(poolId, offsetHex) !== undefined;
  }

  /** Assigns a free offset (one without a row) to an interface. */
  assign(poolId: number, offsetHex: string, address: string, interfaceId: number, nowMs: number): void {
    this.#assign.run(poolId, offsetHex, address, interfaceId, nowMs);
  }

  /** The interface's addresses, IPv4 first (sorted here: an ORDER BY would sort through a temporary B-tree). */
  addressesOf(interfaceId: number): (AddressRow & { family: 4 | 6 })[] {
    return this.#addressesOfInterface
      .all(interfaceId)
      .map((r) => parseRow(FamilyAddressRowSchema, r, 'addresses', isFamilyAddressRow))
      .sort((a, b) => a.family - b.family);
  }

  /** Every address of the interface goes to PendingRelease until `availableAtMs`. */
  releaseInterface(interfaceId: number, nowMs: number, availableAtMs: number): number {
    return this.#releaseInterface.run(nowMs, availableAtMs, interfaceId).changes;
  }

  /** PendingRelease rows whose cooldown has passed become Available (their rows disappear). */
  sweepCooledDown(nowMs: number): number {
    return this.#sweep.run(nowMs).changes;
  }

  /** Addresses of the pool between two offsets (inclusive) that cannot be handed out at `nowMs`. */
  countHeld(poolId: number, fromHex: string, toHex: string, nowMs: number): number {
    return parseRow(CountSchema, this.#countHeld.get(poolId, fromHex, toHex, nowMs), 'addresses', isCount).n;
  }

  /** Drops the pool's PendingRelease rows whose cooldown has ended: those addresses are Available. */
  sweepPool(poolId: number, nowMs: number): number {
    return this.#sweepPool.run(poolId, nowMs).changes;
  }

  /** Addresses per pool and state; PendingRelease rows whose cooldown has ended count as Available. */
  countByState(nowMs: number): { poolId: number; state: string; n: number }[] {
    return this.#countByState.all(nowMs).map((r) => {
      const row = parseRow(StateCountSchema, r, 'addresses', isStateCount);
      return { poolId: row.pool_id, state: row.state, n: row.n };
    });
  }

  /** Assigned and still-cooling addresses (a row whose cooldown has ended is an Available address). */
  list(filter: { network?: string; state?: 'Assigned' | 'PendingRelease' }, nowMs: number): AddressListRow[] {
    return this.#list
      .all({ network: filter.network ?? null, state: filter.state ?? null, nowMs })
      .map((r) => parseRow(AddressListRowSchema, r, 'addresses', isAddressListRow));
  }
}
