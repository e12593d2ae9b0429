/**
 * The reclaimer (ipam/reclaimer.ts) as ferryd runs it: every ferryd in cluster-IPAM mode is a candidate
 * of the Lease ferry-system/ferry-ipam-reclaimer (kube/leader.ts); the one that leads watches the IPClaims
 * and the Nodes (and the IPBlocks, unless the node's own block cache is handed in) and runs a pass every
 * interval and soon after the objects change, until leading ends. Followers watch nothing extra.
 */
import { randomBytes } from 'node:crypto';
import { type IPBlock, type IPRangeSpec, RECLAIMER_LEASE } from '@ferry/shared-types/kube/ipam';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { BackoffOptions } from '../kube/backoff';
import type { IpamApi } from '../kube/ipam-api';
import { LeaderElector, type LeaderStatus } from '../kube/leader';
import { NodeFactsCache, NodeReads } from '../kube/node-facts';
import type { ObjectCache } from '../kube/object-cache';
import { type PassReport, Reclaimer, type ReclaimerPorts } from './reclaimer';

/** Changes in bursts (a node's blocks marked together) are looked at together: passes at most this often. */
const DEFAULT_MIN_GAP_MS = 2_000;
const READ_TIMEOUT_MS = 10_000;

export interface ReclaimerServiceOptions {
  kc: KubeConfig;
  api: IpamApi;
  /** This ferryd's node: the Lease holder is `<nodeName>_<random>`, unique per process. */
  nodeName: string;
  /** The ranges of the networks in block mode (ferryd's config). */
  ranges: readonly IPRangeSpec[];
  /** The node's IPBlock cache, when it has one (shared: not started or stopped here). */
  blocks?: ObjectCache<IPBlock>;
  log: Logger;
  lease?: { namespace: string; name: string };
  leaseDurationSec?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  /** A full look at the cluster this often while leading (`cluster.reclaimSec`); changes bring the next one sooner. */
  intervalMs: number;
  minGapMs?: number;
  notReadyGraceSec?: number;
  backoff?: BackoffOptions;
}

export interface ReclaimerStatus {
  election: LeaderStatus;
  passes: number;
  lastPass: { at: string; report: PassReport } | null;
}

export class ReclaimerService {
  readonly #opts: ReclaimerServiceOptions;
  readonly #log: Logger;
  readonly #elector: LeaderElector;
  #leading: Promise<void> | undefined;
  #passes = 0;
  #lastPass: ReclaimerStatus['lastPass'] = null;
  /** Tests and metrics hear of every pass. */
  readonly #listeners = new Set<(report: PassReport) => void>();

  constructor(opts: ReclaimerServiceOptions) {
    this.#opts = opts;
    this.#log = opts.log.child({ component: 'ipam-reclaimer' });
    const lease = opts.lease ?? RECLAIMER_LEASE;
    this.#elector = new LeaderElector({
      kc: opts.kc,
      namespace: lease.namespace,
      name: lease.name,
      identity: `${opts.nodeName}_${randomBytes(4).toString('hex')}`,
      ...(opts.leaseDurationSec ? { leaseDurationSec: opts.leaseDurationSec } : {}),
      ...(opts.renewDeadlineMs ? { renewDeadlineMs: opts.renewDeadlineMs } : {}),
      ...(opts.retryPeriodMs ? { retryPeriodMs: opts.retryPeriodMs } : {}),
      log: this.#log,
      onStartedLeading: (signal) => {
        this.#leading = this.#lead(signal).catch((err: unknown) => {
          this.#log.error({ err }, 'IPAM reclaimer: the leading loop failed');
        });
      },
      onStoppedLeading: () => {},
    });
  }

  start(): void {
    this.#elector.start();
  }

  async stop(): Promise<void> {
    await this.#elector.stop();
    await this.#leading;
  }

  isLeader(): boolean {
    return this.#elector.isLeader();
  }

  onPass(listener: (report: PassReport) => void): void {
    this.#listeners.add(listener);
  }

  status(): ReclaimerStatus {
    return { election: this.#elector.status(), passes: this.#passes, lastPass: this.#lastPass };
  }

  async #lead(signal: AbortSignal): Promise<void> {
    const { api, kc, log } = { ...this.#opts, log: this.#log };
    const backoff = this.#opts.backoff ? { backoff: this.#opts.backoff } : {};
    const ownBlocks = this.#opts.blocks ? undefined : api.blockCache(log, this.#opts.backoff);
    const blocks = this.#opts.blocks ?? ownBlocks;
    if (!blocks) return;
    const claims = api.claimCache(log, this.#opts.backoff);
    const nodes = new NodeFactsCache({ kc, log, ...backoff });
    const reads = new NodeReads(kc, READ_TIMEOUT_MS);
    const ports: ReclaimerPorts = {
      hasSynced: () => blocks.hasSynced() && claims.hasSynced() && nodes.hasSynced(),
      blocks: () => blocks.list(),
      claims: () => claims.list(),
      node: (name) => nodes.get(name),
      getNode: (name) => reads.getNode(name),
      hasPodsOn: (node) => reads.hasPodsOn(node),
      releaseBlock: (b) => api.releaseBlock(b),
      deleteClaim: (c) => api.deleteClaim(c),
      applyRange: (spec) => api.applyRange(spec),
      updateRangeStatus: (r, s) => api.updateRangeStatus(r, s),
    };
    const reclaimer = new Reclaimer(ports, {
      ranges: this.#opts.ranges,
      log,
      ...(this.#opts.notReadyGraceSec !== undefined ? { notReadyGraceSec: this.#opts.notReadyGraceSec } : {}),
    });
    // A change while a pass runs or during the gap after it makes the next pass start without waiting.
    let dirty = false;
    let wake: () => void = () => {};
    const poke = () => {
      dirty = true;
      wake();
    };
    const unsubscribe = [blocks.onChange(poke), claims.onChange(poke)];
    ownBlocks?.start();
    claims.start();
    nodes.start();
    try {
      while (!signal.aborted) {
        dirty = false;
        const report = await reclaimer.pass(signal);
        if (ports.hasSynced()) {
          this.#passes += 1;
          this.#lastPass = { at: new Date().toISOString(), report };
          for (const l of this.#listeners) l(report);
        }
        await pause(this.#opts.minGapMs ?? DEFAULT_MIN_GAP_MS, signal);
        if (!dirty) {
          await pause(this.#opts.intervalMs, signal, (resolve) => {
            wake = resolve;
          });
        }
      }
    } finally {
      for (const u of unsubscribe) u();
      await Promise.all([ownBlocks?.stop(), claims.stop(), nodes.stop()]);
    }
  }
}

/** Waits `ms`, or until `signal` aborts, or until the function handed to `onWake` is called. */
function pause(ms: number, signal: AbortSignal, onWake?: (resolve: () => void) => void): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done);
    onWake?.(done);
    if (signal.aborted) done();
  });
}
