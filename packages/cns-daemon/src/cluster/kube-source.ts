/**
 * Peers from the Kubernetes API: an Informer (kube/informer.ts) on the cluster's Node objects, each
 * Node validated, and one coherent peer set per change for the listener.
 */

import { describeFirstIssue } from '@ferry/shared-types/parse';
import type { V1Node } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import * as z from 'zod/mini';
import type { BackoffOptions } from '../kube/backoff';
import { loadKubeConfig } from '../kube/connection';
import { Informer } from '../kube/informer';
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
  return new KubePeerSource(opts);
}

class KubePeerSource implements PeerSource {
  readonly #opts: KubePeerSourceOptions;
  readonly #log: Logger;
  readonly #informer: Informer<V1Node>;
  /** Valid peers by node name, kept in step with the informer's cache. */
  readonly #peers = new Map<string, Peer>();
  #listener: PeersListener | undefined;
  #flush: NodeJS.Immediate | undefined;
  #changed = false;
  #hasListed = false;
  #hasReported = false;
  #stopped = false;

  constructor(opts: KubePeerSourceOptions) {
    this.#opts = opts;
    this.#log = opts.log.child({ peerSource: 'kubernetes' });
    this.#informer = new Informer<V1Node>(
      {
        kc: loadKubeConfig(opts.kubeconfig),
        path: '/api/v1/nodes',
        what: 'nodes',
        list: (api, options) => api.listNode({}, options),
        log: this.#log,
        ...(opts.backoff ? { backoff: opts.backoff } : {}),
      },
      {
        add: (node) => this.#upsert(node),
        update: (node) => this.#upsert(node),
        delete: (node) => this.#remove(node.metadata?.name),
        listed: () => {
          this.#hasListed = true;
          this.#changed = this.#changed || !this.#hasReported;
          this.#scheduleFlush();
        },
        event: () => this.#scheduleFlush(),
      },
    );
  }

  start(listener: PeersListener): void {
    if (this.#listener) throw new Error('kubernetes peer source: already started');
    this.#listener = listener;
    this.#log.info({ nodeName: this.#opts.nodeName }, 'watching Kubernetes nodes');
    this.#informer.start();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#flush) clearImmediate(this.#flush);
    await this.#informer.stop();
  }

  status(): PeerSourceStatus {
    return { kind: 'kubernetes', ...this.#informer.status() };
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
