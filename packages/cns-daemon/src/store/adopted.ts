/**
 * What an adoption (Attachments.adopt, attachments/adoption-plan.ts) writes beyond AttachmentStore: an
 * attachment rebuilt from the node under the generation its marker names, and the generation sequence
 * kept above every generation the node shows. Statements are prepared once; callers own transactions.
 */
import type { Db } from './db';
import { isAttachmentRow, isCount } from './row-checks';
import { type AttachmentRow, AttachmentRowSchema, CountSchema, parseRow, SequenceSchema } from './rows';

export interface NewAdoptedAttachment {
  /** The marker's generation: the attachment's key, unless another attachment already has it. */
  generation: number;
  network: string;
  containerId: string;
  ifName: string;
  netns: string;
}

export class AdoptedStore {
  readonly #insert;
  readonly #generationTaken;
  readonly #sequence;
  readonly #setSequence;
  readonly #startSequence;
  readonly #adopted;
  readonly #countAdopted;

  constructor(db: Db) {
    this.#insert = db.prepare(
      `INSERT INTO attachments (generation, network, container_id, if_name, netns, state, created_at_ms, updated_at_ms, adopted_at_ms)
       VALUES (@generation, @network, @containerId, @ifName, @netns, 'committed', @nowMs, @nowMs, @nowMs)`,
    );
    this.#generationTaken = db.prepare('SELECT 1 FROM attachments WHERE generation = ?').pluck();
    // AUTOINCREMENT keeps the largest generation ever handed out here.
    this.#sequence = db.prepare(`SELECT seq FROM sqlite_sequence WHERE name = 'attachments'`).pluck();
    this.#setSequence = db.prepare(`UPDATE sqlite_sequence SET seq = ? WHERE name = 'attachments' AND seq < ?`);
    this.#startSequence = db.prepare(
      `INSERT INTO sqlite_sequence (name, seq) SELECT 'attachments', ?
       WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'attachments')`,
    );
    this.#adopted = db.prepare('SELECT * FROM attachments WHERE adopted_at_ms IS NOT NULL ORDER BY generation');
    this.#countAdopted = db.prepare('SELECT count(*) AS n FROM attachments WHERE adopted_at_ms IS NOT NULL');
  }

  /** Inserts a committed, adopted attachment; returns the row as written. */
  insert(a: NewAdoptedAttachment, nowMs: number): AttachmentRow {
    const generation = this.#generationTaken.get(a.generation) === undefined ? a.generation : null;
    const info = this.#insert.run({
      generation,
      network: a.network,
      containerId: a.containerId,
      ifName: a.ifName,
      netns: a.netns,
      nowMs,
    });
    return {
      generation: Number(info.lastInsertRowid),
      network: a.network,
      container_id: a.containerId,
      if_name: a.ifName,
      netns: a.netns,
      pod_namespace: null,
      pod_name: null,
      pod_uid: null,
      pod_infra_container_id: null,
      state: 'committed',
      created_at_ms: nowMs,
      updated_at_ms: nowMs,
      adopted_at_ms: nowMs,
    };
  }

  /** The largest generation this database has handed out (0 before the first). */
  sequence(): number {
    return parseRow(SequenceSchema, this.#sequence.get() ?? null, 'sqlite_sequence') ?? 0;
  }

  /** Makes every generation handed out from now on larger than `generation`. */
  raiseSequence(generation: number): void {
    this.#startSequence.run(generation);
    this.#setSequence.run(generation, generation);
  }

  countAdopted(): number {
    return parseRow(CountSchema, this.#countAdopted.get(), 'attachments', isCount).n;
  }

  adopted(): AttachmentRow[] {
    return this.#adopted.all().map((r) => parseRow(AttachmentRowSchema, r, 'attachments', isAttachmentRow));
  }
}
