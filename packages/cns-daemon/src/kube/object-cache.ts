/**
 * An informer's view of one kind of custom object (kube/informer.ts lists and watches; this keeps the
 * objects): every object is parsed with its zod schema as it arrives, those that parse are served from
 * memory, those that do not (a hand edit) are kept aside with their problem and logged, never served.
 * Listeners hear of changes once per tick, however many objects a relist applied in it.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type * as z from 'zod/mini';
import type { BackoffOptions } from './backoff';
import { type ClusterCustomObjects, type CustomObjectMeta, type InvalidObject, problemOf } from './custom-objects';
import { Informer, type InformerStatus } from './informer';

export interface ObjectCacheOptions<T extends { metadata: CustomObjectMeta }> {
  kc: KubeConfig;
  objects: ClusterCustomObjects<T>;
  schema: z.ZodMiniType<T>;
  log: Logger;
  backoff?: BackoffOptions;
}

export interface ObjectCacheStatus extends InformerStatus {
  synced: boolean;
  objects: number;
  invalid: number;
}

export class ObjectCache<T extends { metadata: CustomObjectMeta }> {
  readonly #objects = new Map<string, T>();
  readonly #invalid = new Map<string, string>();
  readonly #listeners = new Set<() => void>();
  readonly #informer: Informer<{ metadata?: { name?: string } }>;
  readonly #schema: z.ZodMiniType<T>;
  readonly #log: Logger;
  readonly #what: string;
  #synced = false;
  #notifyScheduled = false;

  constructor(opts: ObjectCacheOptions<T>) {
    const { group, version, plural } = opts.objects.ref;
    this.#schema = opts.schema;
    this.#what = `${plural}.${group}`;
    this.#log = opts.log;
    this.#informer = new Informer(
      {
        kc: opts.kc,
        path: `/apis/${group}/${version}/${plural}`,
        what: this.#what,
        // The informer hands a CoreV1Api; custom objects are listed through their own client.
        list: (_core, options) => opts.objects.listRaw(options),
        log: opts.log,
        ...(opts.backoff ? { backoff: opts.backoff } : {}),
      },
      {
        add: (raw) => this.#apply(raw),
        update: (raw) => this.#apply(raw),
        delete: (raw) => this.#remove(raw),
        // After the tick in which ListWatch applies the list's items.
        listed: () =>
          setImmediate(() => {
            this.#synced = true;
            this.#changed();
          }),
      },
    );
  }

  start(): void {
    this.#informer.start();
  }

  async stop(): Promise<void> {
    await this.#informer.stop();
  }

  /** True once a list has been applied: before it, nothing is known. */
  hasSynced(): boolean {
    return this.#synced;
  }

  get(name: string): T | undefined {
    return this.#objects.get(name);
  }

  list(): T[] {
    return [...this.#objects.values()];
  }

  /** Objects the schema refuses, by name, with the problem. */
  invalid(): InvalidObject[] {
    return [...this.#invalid].map(([name, problem]) => ({ name, problem }));
  }

  /** `listener` runs (once per tick at most) after changes were applied. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  status(): ObjectCacheStatus {
    return {
      ...this.#informer.status(),
      synced: this.#synced,
      objects: this.#objects.size,
      invalid: this.#invalid.size,
    };
  }

  #apply(raw: { metadata?: { name?: string } }): void {
    const name = raw.metadata?.name ?? '';
    const r = this.#schema.safeParse(raw);
    if (r.success) {
      this.#objects.set(name, r.data);
      this.#invalid.delete(name);
    } else {
      const problem = problemOf(r.error);
      // An object that stops parsing is not served as it was: what the API holds now is hostile.
      this.#objects.delete(name);
      if (this.#invalid.get(name) !== problem) {
        this.#log.warn({ object: name, problem }, `a ${this.#what} object in the API is not valid; it is ignored`);
      }
      this.#invalid.set(name, problem);
    }
    this.#changed();
  }

  #remove(raw: { metadata?: { name?: string } }): void {
    const name = raw.metadata?.name ?? '';
    this.#objects.delete(name);
    this.#invalid.delete(name);
    this.#changed();
  }

  #changed(): void {
    if (this.#notifyScheduled || !this.#synced) return;
    this.#notifyScheduled = true;
    setImmediate(() => {
      this.#notifyScheduled = false;
      for (const listener of this.#listeners) listener();
    });
  }
}
