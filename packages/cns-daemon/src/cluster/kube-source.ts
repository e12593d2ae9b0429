/**
 * Peers from the Kubernetes API: @kubernetes/client-node's informer (ListWatch) lists Node objects, then
 * watches from the list's resourceVersion, relists on 410 Gone and resumes after a dropped connection.
 * This module adds what the informer leaves to its caller: bookmarks and a watch deadline (NodeWatch),
 * retrying with a bounded back-off when the API server is away (the informer stops on any other error),
 * validation of each Node, and one coherent peer set per change for the listener.
 */

import { describeFirstIssue } from '@ferry/shared-types/parse';
import {
  CoreV1Api,
  KubeConfig,
  ListWatch,
  Observable,
  type V1Node,
  type V1NodeList,
  Watch,
} from '@kubernetes/client-node';
import type { Logger } from 'pino';
import * as z from 'zod/mini';
import { StartupError } from '../errors';
import { type BackoffOptions, backoffDelayMs, DEFAULT_BACKOFF } from './backoff';
import type { Peer, PeerSource, PeerSourceStatus, PeersListener } from './peers';

export interface KubePeerSourceOptions {
  /** A kubeconfig file (out-of-cluster); without it, the pod's service account (in-cluster). */
  kubeconfig?: string;
  /** This node's name (NODE_NAME or the config): never reported as a peer. */
  nodeName: string;
  log: Logger;
  /** The wait between attempts while the API server is away. */
  backoff?: BackoffOptions;
}

const NODES_PATH = '/api/v1/nodes';
/** A list of 5,000 Nodes is a few MB; an API server that has not answered in a minute is retried. */
const LIST_TIMEOUT_MS = 60_000;
/** client-go's reflector asks for 5 to 10 min watches (randomised, so nodes do not reconnect together). */
const WATCH_TIMEOUT_MIN_SEC = 300;
/** How long past its timeoutSeconds a watch may stay open before we cut it (a half-open connection). */
const WATCH_DEADLINE_GRACE_SEC = 30;

const IpSchema = z.union([z.ipv4(), z.ipv6()]);
const cidr = () => z.union([z.cidrv4(), z.cidrv6()]);

/** The fields of a Node that peers are made of; everything else in the object is ignored. */
const NodeSchema = z.object({
  metadata: z.object({ name: z.string().check(z.minLength(1)) }),
  spec: z.optional(
    z.object({
      podCIDR: z.optional(cidr()),
      podCIDRs: z.optional(z.array(cidr())),
    }),
  ),
  status: z.optional(
    z.object({
      addresses: z.optional(
        z.array(z.object({ type: z.string(), address: z.string() })).check(
          z.refine((list) => list.every((a) => a.type !== 'InternalIP' || IpSchema.safeParse(a.address).success), {
            message: 'an InternalIP address is not an IP address',
          }),
        ),
      ),
    }),
  ),
});

/** A Status object, as an ERROR watch event carries it (410 Gone: the resourceVersion was compacted). */
const StatusSchema = z.object({ code: z.optional(z.number()), message: z.optional(z.string()) });

/** The peer a Node object stands for, or the reason it cannot be one. */
export function peerOfNode(node: unknown): { peer: Peer } | { problem: string } {
  const r = NodeSchema.safeParse(node);
  if (!r.success) return { problem: describeFirstIssue(r.error) };
  const { metadata, spec, status } = r.data;
  const addresses = (status?.addresses ?? []).filter((a) => a.type === 'InternalIP').map((a) => a.address);
  // spec.podCIDRs (dual-stack, 1.16+) lists podCIDR first; older API servers set only podCIDR.
  const podCIDRs = spec?.podCIDRs ?? (spec?.podCIDR ? [spec.podCIDR] : []);
  return { peer: { name: metadata.name, addresses, podCIDRs } };
}

/** A PeerSource fed by a watch on the cluster's Node objects. Throws StartupError for an unusable config. */
export function createKubePeerSource(opts: KubePeerSourceOptions): PeerSource {
  return new KubePeerSource(loadKubeConfig(opts.kubeconfig), opts);
}

function loadKubeConfig(path: string | undefined): KubeConfig {
  const kc = new KubeConfig();
  try {
    if (path) kc.loadFromFile(path);
    else kc.loadFromCluster();
  } catch (err) {
    throw new StartupError(`load kubeconfig ${path ?? '(in-cluster)'}: ${messageOf(err)}`, { cause: err });
  }
  const server = kc.getCurrentCluster()?.server;
  // loadFromCluster builds "https://undefined:undefined" when KUBERNETES_SERVICE_HOST/PORT are unset.
  if (!server || /\/\/(undefined|\[undefined\])(:|$)/.test(server)) {
    throw new StartupError(
      path
        ? `load kubeconfig ${path}: its current context names no cluster server`
        : 'watch Kubernetes nodes: no kubeconfig given and not in a cluster (KUBERNETES_SERVICE_HOST is unset)',
    );
  }
  return kc;
}

/** What the watch wrapper reports to the source. */
interface WatchHooks {
  onEvent(type: string, object: unknown): void;
}

/**
 * The library's Watch with what ListWatch does not ask for: bookmarks (so a resumed watch starts from a
 * recent resourceVersion instead of one the API server may have compacted), a server-side timeout, a
 * client-side deadline that cuts a watch whose connection died without a FIN, and close(): ListWatch's
 * stop() misses a watch it starts after a list that was in flight, or one still connecting.
 */
class NodeWatch extends Watch {
  readonly #hooks: WatchHooks;
  readonly #open = new Set<AbortController>();
  #closed = false;

  constructor(config: KubeConfig, hooks: WatchHooks) {
    super(config);
    this.#hooks = hooks;
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
        this.#hooks.onEvent(phase, object);
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

class KubePeerSource implements PeerSource {
  readonly #opts: KubePeerSourceOptions;
  readonly #log: Logger;
  readonly #informer: ListWatch<V1Node>;
  readonly #watch: NodeWatch;
  /** Valid peers by node name, kept in step with the informer's cache. */
  readonly #peers = new Map<string, Peer>();
  readonly #status: PeerSourceStatus = { kind: 'kubernetes', lastSync: null, watchRestarts: 0, lastError: null };
  #listener: PeersListener | undefined;
  #connects = 0;
  #failures = 0;
  #retry: NodeJS.Timeout | undefined;
  #flush: NodeJS.Immediate | undefined;
  #changed = false;
  #hasListed = false;
  #hasReported = false;
  #stopped = false;

  constructor(kc: KubeConfig, opts: KubePeerSourceOptions) {
    this.#opts = opts;
    this.#log = opts.log.child({ peerSource: 'kubernetes' });
    const api = kc.makeApiClient(CoreV1Api);
    this.#watch = new NodeWatch(kc, { onEvent: (type, object) => this.#onWatchEvent(type, object) });
    this.#informer = new ListWatch<V1Node>(NODES_PATH, this.#watch, () => this.#list(api), false);
    this.#informer.on('add', (node) => this.#upsert(node));
    this.#informer.on('update', (node) => this.#upsert(node));
    this.#informer.on('delete', (node) => this.#remove(node.metadata?.name));
    // 'connect' comes before every list or watch the informer starts: the first is the start itself.
    this.#informer.on('connect', () => {
      this.#connects += 1;
      this.#status.watchRestarts = Math.max(0, this.#connects - 1);
    });
    this.#informer.on('error', (err) => this.#onError(err));
  }

  start(listener: PeersListener): void {
    if (this.#listener) throw new Error('kubernetes peer source: already started');
    this.#listener = listener;
    this.#log.info({ nodeName: this.#opts.nodeName }, 'watching Kubernetes nodes');
    this.#restart();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#retry);
    if (this.#flush) clearImmediate(this.#flush);
    this.#watch.close();
    await this.#informer.stop();
  }

  status(): PeerSourceStatus {
    return { ...this.#status };
  }

  async #list(api: CoreV1Api): Promise<V1NodeList> {
    const list = await api.listNode(
      {},
      {
        middleware: [
          {
            pre: (ctx) => {
              ctx.setSignal(AbortSignal.timeout(LIST_TIMEOUT_MS));
              return new Observable(Promise.resolve(ctx));
            },
            post: (ctx) => new Observable(Promise.resolve(ctx)),
          },
        ],
        middlewareMergeStrategy: 'append',
      },
    );
    // The informer applies the list in the same tick once this resolves; report after that.
    this.#hasListed = true;
    this.#synced();
    this.#changed = this.#changed || !this.#hasReported;
    this.#scheduleFlush();
    return list;
  }

  #onWatchEvent(type: string, object: unknown): void {
    if (type === 'ERROR') {
      const status = StatusSchema.safeParse(object);
      const what = status.success ? `${status.data.code ?? '?'} ${status.data.message ?? ''}`.trim() : 'unreadable';
      this.#status.lastError = `watch nodes: error event: ${what}`;
      this.#log.info({ event: what }, 'Kubernetes node watch ended by an error event; the informer starts again');
      return;
    }
    this.#synced();
    this.#scheduleFlush();
  }

  /** A list or a watch event was applied: the view is complete and the API server reachable. */
  #synced(): void {
    this.#status.lastSync = new Date().toISOString();
    this.#status.lastError = null;
    this.#failures = 0;
  }

  #upsert(node: V1Node): void {
    const name = node.metadata?.name;
    if (name === this.#opts.nodeName) return;
    const parsed = peerOfNode(node);
    if ('problem' in parsed) {
      this.#log.warn({ node: name ?? '(unnamed)', problem: parsed.problem }, 'skip malformed Node object');
      this.#remove(name);
      return;
    }
    const { peer } = parsed;
    if (samePeer(this.#peers.get(peer.name), peer)) return;
    this.#peers.set(peer.name, peer);
    this.#changed = true;
  }

  #remove(name: string | undefined): void {
    if (name !== undefined && this.#peers.delete(name)) this.#changed = true;
  }

  // Informer callbacks come one object at a time (a relist calls them for every Node): report once the
  // tick that applied them is over, so the listener only ever sees a whole view.
  #scheduleFlush(): void {
    if (this.#flush || this.#stopped) return;
    this.#flush = setImmediate(() => {
      this.#flush = undefined;
      if (!this.#changed || !this.#hasListed) return;
      this.#changed = false;
      this.#hasReported = true;
      const peers = [...this.#peers.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      try {
        this.#listener?.(peers);
      } catch (err) {
        this.#log.error({ err }, 'peers listener failed');
      }
    });
  }

  // The informer stops after any error but 410 Gone (which it handles by relisting): start it again,
  // waiting longer after each failure in a row.
  #onError(err: unknown): void {
    if (this.#stopped) return;
    this.#failures += 1;
    const delayMs = backoffDelayMs(this.#failures, this.#opts.backoff ?? DEFAULT_BACKOFF);
    this.#status.lastError = describeApiError(err);
    this.#log.warn(
      { problem: this.#status.lastError, failures: this.#failures, retryInMs: delayMs },
      'Kubernetes API unreachable or refused the node watch; retrying',
    );
    clearTimeout(this.#retry);
    this.#retry = setTimeout(() => this.#restart(), delayMs);
  }

  #restart(): void {
    this.#retry = undefined;
    if (this.#stopped) return;
    this.#informer.start().catch((err: unknown) => this.#onError(err));
  }
}

function samePeer(a: Peer | undefined, b: Peer): boolean {
  return (
    a !== undefined &&
    a.addresses.length === b.addresses.length &&
    a.addresses.every((x, i) => x === b.addresses[i]) &&
    a.podCIDRs.length === b.podCIDRs.length &&
    a.podCIDRs.every((x, i) => x === b.podCIDRs[i])
  );
}

/** One line for status() and the log: the HTTP status and the API server's own message when it sent one. */
function describeApiError(err: unknown): string {
  const e = z
    .object({
      code: z.optional(z.union([z.number(), z.string()])),
      statusCode: z.optional(z.number()),
      body: z.optional(z.unknown()),
      message: z.optional(z.string()),
    })
    .safeParse(err);
  if (!e.success) return `kubernetes api: ${String(err)}`;
  const status = e.data.statusCode ?? (typeof e.data.code === 'number' ? e.data.code : undefined);
  const body = z.object({ message: z.string() }).safeParse(e.data.body);
  if (status !== undefined) {
    const why = body.success ? body.data.message : (e.data.message ?? '').split('\n')[0];
    return `kubernetes api: HTTP ${status}${why ? `: ${why}` : ''}`;
  }
  return `kubernetes api: ${messageOf(err)}`;
}

function messageOf(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
  return `${err.message}${cause}`;
}
