/**
 * The blocks and static_claims tables (migration 0004): what this node holds of the cluster's ranges and
 * static addresses, and what it is giving back. Statements are prepared once; callers own transactions.
 * These rows are read a few times a second at most (the block manager), never per address: no generated
 * row check.
 */
import type { Db } from './db';
import { type BlockRow, BlockRowSchema, parseRow, type StaticClaimRow, StaticClaimRowSchema } from './rows';

export type { BlockRow, StaticClaimRow } from './rows';

export class BlockStore {
  readonly #ofPool;
  readonly #all;
  readonly #insert;
  readonly #setState;
  readonly #setEmptySince;
  readonly #delete;
  readonly #claims;
  readonly #claimAt;
  readonly #insertClaim;
  readonly #setClaimState;
  readonly #deleteClaim;

  constructor(db: Db) {
    this.#ofPool = db.prepare('SELECT * FROM blocks WHERE pool_id = ? ORDER BY cidr');
    this.#all = db.prepare('SELECT * FROM blocks ORDER BY pool_id, cidr');
    this.#insert = db.prepare(
      `INSERT INTO blocks (pool_id, cidr, name, uid, state, claimed_at_ms, empty_since_ms)
       VALUES (@poolId, @cidr, @name, @uid, 'held', @nowMs, NULL)
       ON CONFLICT (pool_id, cidr) DO UPDATE SET name = excluded.name, uid = excluded.uid, state = 'held'`,
    );
    this.#setState = db.prepare('UPDATE blocks SET state = ? WHERE pool_id = ? AND cidr = ?');
    this.#setEmptySince = db.prepare('UPDATE blocks SET empty_since_ms = ? WHERE pool_id = ? AND cidr = ?');
    this.#delete = db.prepare('DELETE FROM blocks WHERE pool_id = ? AND cidr = ?');
    this.#claims = db.prepare('SELECT * FROM static_claims ORDER BY address');
    this.#claimAt = db.prepare('SELECT * FROM static_claims WHERE address = ?');
    this.#insertClaim = db.prepare(
      `INSERT INTO static_claims (address, name, uid, state, pod_namespace, pod_name, pod_uid, claimed_at_ms)
       VALUES (@address, @name, @uid, 'held', @podNamespace, @podName, @podUid, @nowMs)
       ON CONFLICT (address) DO UPDATE SET name = excluded.name, uid = excluded.uid, state = 'held',
         pod_namespace = excluded.pod_namespace, pod_name = excluded.pod_name, pod_uid = excluded.pod_uid`,
    );
    this.#setClaimState = db.prepare('UPDATE static_claims SET state = ? WHERE address = ?');
    this.#deleteClaim = db.prepare('DELETE FROM static_claims WHERE address = ? AND uid = ?');
  }

  blocksOf(poolId: number): BlockRow[] {
    return this.#ofPool.all(poolId).map((r) => parseRow(BlockRowSchema, r, 'blocks'));
  }

  all(): BlockRow[] {
    return this.#all.all().map((r) => parseRow(BlockRowSchema, r, 'blocks'));
  }

  /** Records a block the API server says this node holds (a claim answered, or re-learned); held again if it was releasing. */
  hold(b: { poolId: number; cidr: string; name: string; uid: string; nowMs: number }): void {
    this.#insert.run(b);
  }

  /** A held block is given back: from now on nothing is handed out of it. */
  markReleasing(poolId: number, cidr: string): void {
    this.#setState.run('releasing', poolId, cidr);
  }

  setEmptySince(poolId: number, cidr: string, sinceMs: number | null): void {
    this.#setEmptySince.run(sinceMs, poolId, cidr);
  }

  /** The API server no longer has the block as this node's (released, or gone). */
  forget(poolId: number, cidr: string): void {
    this.#delete.run(poolId, cidr);
  }

  claims(): StaticClaimRow[] {
    return this.#claims.all().map((r) => parseRow(StaticClaimRowSchema, r, 'static_claims'));
  }

  claimAt(address: string): StaticClaimRow | undefined {
    const row = this.#claimAt.get(address);
    return row === undefined ? undefined : parseRow(StaticClaimRowSchema, row, 'static_claims');
  }

  holdClaim(c: {
    address: string;
    name: string;
    uid: string;
    podNamespace: string;
    podName: string;
    podUid: string;
    nowMs: number;
  }): void {
    this.#insertClaim.run(c);
  }

  markClaimReleasing(address: string): void {
    this.#setClaimState.run('releasing', address);
  }

  forgetClaim(address: string, uid: string): void {
    this.#deleteClaim.run(address, uid);
  }
}
