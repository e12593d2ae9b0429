/**
 * A list/watch of one kind of Kubernetes object, kept going for as long as ferryd runs: the peers'
 * Nodes and this node's Pods both use it. @kubernetes/client-node's ListWatch lists, then watches from
 * the list's resourceVersion, relists on 410 Gone and resumes after a dropped connection; this module
 * adds what ListWatch leaves to its caller: bookmarks and a watch deadline (BoundedWatch), a list
 * deadline, starting again with a bounded back-off when the API server is away or refuses (ListWatch
 * stops on any other error), and a status for operators and metrics.
 */
import {
  type ConfigurationOptions,
  CoreV1Api,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  ListWatch,
  Watch,
} from '@kubernetes/client-node';
import type { Logger } from 'pino';
import * as z from 'zod/mini';
import { type BackoffOptions, backoffDelayMs, DEFAULT_BACKOFF } from './backoff';
import { callOptions, describeApiError } from './connection';

/** A list of 5,000 Nodes is a few MB; an API server that has not answered in a minute is retried. */
const LIST_TIMEOUT_MS = 60_000;
/** client-go's reflector asks for 5 to 10 min watches (randomised, so nodes do not reconnect together). */
const WATCH_TIMEOUT_MIN_SEC = 300;
/** How long past its timeoutSeconds a watch may stay open before we cut it (a half-open connection). */
const WATCH_DEADLINE_GRACE_SEC = 30;

/** A Status object, as an ERROR watch event carries it (410 Gone: the resourceVersion was compacted). */
const StatusSchema = z.object({ code: z.optional(z.number()), message: z.optional(z.string()) });

export interface InformerStatus {
  /** ISO time of the last complete view (a list, or a watch event applied); null before the first. */
  lastSync: string | null;
  /** How often the watch was started again (410 Gone, a dropped connection, the API server away). */
  watchRestarts: number;
  /** The last error talking to the API server since the last complete view, if any. */
  lastError: string | null;
}

export interface InformerOptions<T extends KubernetesObject> {
  kc: KubeConfig;
  /** The collection's path: `/api/v1/nodes`, `/api/v1/pods`. */
  path: string;
  /** What is watched, for log lines and errors: `nodes`, `pods`. */
  what: string;
  /** Applied to the list and to every watch (`spec.nodeName=node-a`). */
  fieldSelector?: string;
  /** Lists the collection (with `fieldSelector`, when there is one) through `api`, with `options`. */
  list(api: CoreV1Api, options: ConfigurationOptions): Promise<KubernetesListObject<T>>;
  log: Logger;
  /** The wait between attempts while the API server is away. */
  backoff?: BackoffOptions;
}

/** What an informer tells its owner; add/update/delete come from ListWatch, one object at a time. */
export interface InformerHandlers<T> {
  add(object: T): void;
  update(object: T): void;
  delete(object: T): void;
  /**
   * A list returned: ListWatch applies its items in the same tick, right after this (calling add,
   * update and delete for each), so this may only schedule work that reads the result.
   */
  listed?(): void;
  /** A watch event other than ERROR is about to be applied (a BOOKMARK too): schedule, as for listed. */
  event?(type: string): void;
}

/**
 * The library's Watch with what ListWatch does not ask for: bookmarks (so a resumed watch starts from a
 * recent resourceVersion instead of one the API server may have compacted), a server-side timeout, a
 * client-side deadline that cuts a watch whose connection died without a FIN, and close(): ListWatch's
 * stop() misses a watch it starts after a list that was in flight, or one still connecting.
 */
class BoundedWatch extends Watch {
  readonly #onEvent: (type: string, object: unknown) => void;
  readonly #open = new Set<AbortController>();
  #closed = false;

  constructor(config: KubeConfig, onEvent: (type: string, object: unknown) => void) {
    super(config);
    this.#onEvent = onEvent;
  }

  override async watch(
    path: string,
    queryParams: Record<string, string | number | boolean | undefined>,
    callback: (phase: string, apiObj: unknown, watchObj?: unknown) => void,
    done: (err: unknown) => void,
  ): Promise<AbortController> {
    if (this.#closed) return abortedController();
    const timeoutSeconds = Math.round(WATCH_TIMEOUT_MIN_SEC * (1 + Math.random()));
    let deadline: NodeJS.Timeout | undefined;
    let controller: AbortController | undefined;
    controller = await super.watch(
      path,
      { ...queryParams, allowWatchBookmarks: true, timeoutSeconds },
      (phase, object, raw) => {
        this.#onEvent(phase, object);
        callback(phase, object, raw);
      },
      (err) => {
        clearTimeout(deadline);
        if (controller) this.#open.delete(controller);
        done(err);
      },
    );
    if (this.#closed) controller.abort();
    if (!controller.signal.aborted) {
      this.#open.add(controller);
      const c = controller;
      deadline = setTimeout(() => c.abort(), (timeoutSeconds + WATCH_DEADLINE_GRACE_SEC) * 1000);
      deadline.unref();
    }
    return controller;
  }

  /** Ends every open watch and refuses new ones. */
  close(): void {
    this.#closed = true;
    for (const c of this.#open) c.abort();
    this.#open.clear();
  }
}

function abortedController(): AbortController {
  const c = new AbortController();
  c.abort();
  return c;
}

export class Informer<T extends KubernetesObject> {
  readonly #opts: InformerOptions<T>;
  readonly #handlers: InformerHandlers<T>;
  readonly #listWatch: ListWatch<T>;
  readonly #watch: BoundedWatch;
  readonly #status: InformerStatus = { lastSync: null, watchRestarts: 0, lastError: null };
  #connects = 0;
  #failures = 0;
  #retry: NodeJS.Timeout | undefined;
  #started = false;
  #stopped = false;

  constructor(opts: InformerOptions<T>, handlers: InformerHandlers<T>) {
    this.#opts = opts;
    this.#handlers = handlers;
    const api = opts.kc.makeApiClient(CoreV1Api);
    this.#watch = new BoundedWatch(opts.kc, (type, object) => this.#onWatchEvent(type, object));
    this.#listWatch = new ListWatch<T>(
      opts.path,
      this.#watch,
      () => this.#list(api),
      false,
      undefined,
      opts.fieldSelector,
    );
    this.#listWatch.on('add', (o) => handlers.add(o));
    this.#listWatch.on('update', (o) => handlers.update(o));
    this.#listWatch.on('delete', (o) => handlers.delete(o));
    // 'connect' comes before every list or watch ListWatch starts: the first is the start itself.
    this.#listWatch.on('connect', () => {
      this.#connects += 1;
      this.#status.watchRestarts = Math.max(0, this.#connects - 1);
    });
    this.#listWatch.on('error', (err) => this.#onError(err));
  }

  start(): void {
    if (this.#started) throw new Error(`watch ${this.#opts.what}: already started`);
    this.#started = true;
    this.#restart();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#retry);
    this.#watch.close();
    await this.#listWatch.stop();
  }

  status(): InformerStatus {
    return { ...this.#status };
  }

  async #list(api: CoreV1Api): Promise<KubernetesListObject<T>> {
    const list = await this.#opts.list(api, callOptions({ timeoutMs: LIST_TIMEOUT_MS }));
    this.#synced();
    this.#handlers.listed?.();
    return list;
  }

  #onWatchEvent(type: string, object: unknown): void {
    if (type === 'ERROR') {
      const status = StatusSchema.safeParse(object);
      const what = status.success ? `${status.data.code ?? '?'} ${status.data.message ?? ''}`.trim() : 'unreadable';
      this.#status.lastError = `watch ${this.#opts.what}: error event: ${what}`;
      this.#opts.log.info(
        { event: what },
        `Kubernetes watch of ${this.#opts.what} ended by an error event; the informer starts again`,
      );
      return;
    }
    this.#synced();
    this.#handlers.event?.(type);
  }

  /** A list or a watch event was applied: the view is complete and the API server reachable. */
  #synced(): void {
    this.#status.lastSync = new Date().toISOString();
    this.#status.lastError = null;
    this.#failures = 0;
  }

  // ListWatch stops after any error but 410 Gone (which it handles by relisting): start it again,
  // waiting longer after each failure in a row.
  #onError(err: unknown): void {
    if (this.#stopped) return;
    this.#failures += 1;
    const delayMs = backoffDelayMs(this.#failures, this.#opts.backoff ?? DEFAULT_BACKOFF);
    this.#status.lastError = describeApiError(err);
    this.#opts.log.warn(
      { problem: this.#status.lastError, failures: this.#failures, retryInMs: delayMs },
      `Kubernetes API unreachable or refused the watch of ${this.#opts.what}; retrying`,
    );
    clearTimeout(this.#retry);
    this.#retry = setTimeout(() => this.#restart(), delayMs);
  }

  #restart(): void {
    this.#retry = undefined;
    if (this.#stopped) return;
    this.#listWatch.start().catch((err: unknown) => this.#onError(err));
  }
}
