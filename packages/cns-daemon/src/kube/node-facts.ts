/**
 * What the cluster-wide IPAM job needs to know of Nodes and their pods: whether a Node exists (by name,
 * with which uid) and since when it has not been Ready, from an informer (for the periodic look) and by
 * a fresh GET (right before acting); and whether any pod is bound to a node, by a fresh LIST with the
 * field selector spec.nodeName (never from a cache: a pod the cache has not seen yet may hold an address).
 */
import { CoreV1Api, type KubeConfig, type V1Node } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import * as z from 'zod/mini';
import { toKubeApiError } from './api-error';
import type { BackoffOptions } from './backoff';
import { callOptions } from './connection';
import { Informer, type InformerStatus } from './informer';

export interface NodeFacts {
  uid: string;
  /**
   * When the Ready condition last became other than True (its lastTransitionTime, ms since the epoch),
   * or undefined while the node is Ready. A node that never reported is counted from its creation.
   */
  notReadySinceMs: number | undefined;
}

const NodeSchema = z.object({
  metadata: z.object({ name: z.string(), uid: z.string(), creationTimestamp: z.optional(z.unknown()) }),
  status: z.optional(
    z.object({
      conditions: z.optional(
        z.array(z.object({ type: z.string(), status: z.string(), lastTransitionTime: z.optional(z.unknown()) })),
      ),
    }),
  ),
});

/** The client hands times over as Date objects (its model) or strings (raw JSON). */
function msOf(time: unknown): number | undefined {
  if (time instanceof Date) return time.getTime();
  if (typeof time === 'string') {
    const ms = Date.parse(time);
    return Number.isNaN(ms) ? undefined : ms;
  }
  return undefined;
}

/** A Node's facts, or undefined when the object does not say enough (no name or uid). */
export function nodeFactsOf(node: unknown): { name: string; facts: NodeFacts } | undefined {
  const r = NodeSchema.safeParse(node);
  if (!r.success) return undefined;
  const { metadata, status } = r.data;
  const ready = status?.conditions?.find((c) => c.type === 'Ready');
  const notReadySinceMs =
    ready?.status === 'True' ? undefined : (msOf(ready?.lastTransitionTime) ?? msOf(metadata.creationTimestamp) ?? 0);
  return { name: metadata.name, facts: { uid: metadata.uid, notReadySinceMs } };
}

/** Every Node's facts, from a list/watch. */
export class NodeFactsCache {
  readonly #facts = new Map<string, NodeFacts>();
  readonly #informer: Informer<V1Node>;
  #synced = false;

  constructor(opts: { kc: KubeConfig; log: Logger; backoff?: BackoffOptions }) {
    this.#informer = new Informer<V1Node>(
      {
        kc: opts.kc,
        path: '/api/v1/nodes',
        what: 'nodes',
        list: (api, options) => api.listNode({}, options),
        log: opts.log,
        ...(opts.backoff ? { backoff: opts.backoff } : {}),
      },
      {
        add: (node) => this.#upsert(node),
        update: (node) => this.#upsert(node),
        delete: (node) => {
          if (node.metadata?.name) this.#facts.delete(node.metadata.name);
        },
        listed: () =>
          setImmediate(() => {
            this.#synced = true;
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

  hasSynced(): boolean {
    return this.#synced;
  }

  get(name: string): NodeFacts | undefined {
    return this.#facts.get(name);
  }

  status(): InformerStatus {
    return this.#informer.status();
  }

  #upsert(node: V1Node): void {
    const f = nodeFactsOf(node);
    if (f) this.#facts.set(f.name, f.facts);
  }
}

/** Fresh reads: a Node by GET, the pods bound to a node by LIST. KubeApiError on failure. */
export class NodeReads {
  readonly #api: CoreV1Api;
  readonly #timeoutMs: number;

  constructor(kc: KubeConfig, timeoutMs: number) {
    this.#api = kc.makeApiClient(CoreV1Api);
    this.#timeoutMs = timeoutMs;
  }

  /** The Node's facts now, or undefined when the API server has no Node of that name. */
  async getNode(name: string): Promise<NodeFacts | undefined> {
    try {
      const node = await this.#api.readNode({ name }, callOptions({ timeoutMs: this.#timeoutMs }));
      return nodeFactsOf(node)?.facts;
    } catch (err) {
      const e = toKubeApiError(err, `get nodes ${name}`);
      if (e.kind === 'gone') return undefined;
      throw e;
    }
  }

  /** Whether any pod (whatever its phase) is bound to `node` now. */
  async hasPodsOn(node: string): Promise<boolean> {
    try {
      const list = await this.#api.listPodForAllNamespaces(
        { fieldSelector: `spec.nodeName=${node}`, limit: 1 },
        callOptions({ timeoutMs: this.#timeoutMs }),
      );
      return list.items.length > 0;
    } catch (err) {
      throw toKubeApiError(err, `list pods on ${node}`);
    }
  }
}
