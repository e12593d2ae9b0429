/** The node_state table: small facts about the node and this database, by key. Callers own transactions. */
import type { Db } from './db';
import { NodeStateValueSchema, parseRow } from './rows';

/** The keys ferryd keeps; anything else in the table is left alone. */
export type NodeStateKey = 'boot_id' | 'database_recovered';

export class NodeStateStore {
  readonly #get;
  readonly #set;

  constructor(db: Db) {
    this.#get = db.prepare('SELECT value FROM node_state WHERE key = ?').pluck();
    this.#set = db.prepare(
      'INSERT INTO node_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
    );
  }

  get(key: NodeStateKey): string | undefined {
    return parseRow(NodeStateValueSchema, this.#get.get(key) ?? null, 'node_state') ?? undefined;
  }

  set(key: NodeStateKey, value: string): void {
    this.#set.run(key, value);
  }
}
