/**
 * The one cluster-wide IPAM job, run only by the leader of the reclaimer's Lease (ipam/reclaimer-service.ts
 * wires it to kube/leader.ts): it gives back the IPBlocks and IPClaims of nodes that are gone, and keeps
 * each IPRange's status (blocks held and free, Exhausted, NearlyExhausted).
 *
 * A node is gone when its Node object is deleted (the garbage collector then marks the node's objects,
 * whose finalizer keeps them), re-created under a new uid (the objects' owner is the old Node), or not
 * Ready for longer than the grace period (`notReadyGraceSec`; 0 never counts a NotReady node as gone).
 * Its objects are released only once the API server holds no pod bound to that node (a fresh LIST by
 * spec.nodeName, whatever the pods' phase), and only after a fresh GET of the Node confirms the verdict:
 * while any pod of the node exists, one of its addresses may be in use. A block the holder itself is
 * releasing (marked, holder alive) is the holder's business. Claims of gone pods on live nodes are the
 * holder's too: only it knows whether the address is still assigned.
 *
 * The decisions are pure functions (nodesToReclaim, rangeStatusOf); Reclaimer.pass() does the I/O, and
 * checks its leadership signal before every write.
 */

import { isDeepStrictEqual } from 'node:util';
import {
  type Condition,
  type IPBlock,
  type IPClaim,
  type IPRange,
  type IPRangeSpec,
  type IPRangeStatus,
  parseBlockCidr,
  RangeCondition,
  rangeNameOf,
} from '@ferry/shared-types/kube/ipam';
import type { Logger } from 'pino';
import { KubeApiError } from '../kube/api-error';
import { describeApiError } from '../kube/connection';
import type { ReleaseOutcome } from '../kube/custom-objects';
import type { NodeFacts } from '../kube/node-facts';

/** What the reclaimer reads and writes; kube implementations in reclaimer-service.ts, fakes in tests. */
export interface ReclaimerPorts {
  /** The caches below have listed at least once (before that, a Node missing from them means nothing). */
  hasSynced(): boolean;
  blocks(): readonly IPBlock[];
  claims(): readonly IPClaim[];
  /** A Node's facts as the Node informer last saw them. */
  node(name: string): NodeFacts | undefined;
  /** A Node's facts now (a GET), or undefined when there is no such Node. */
  getNode(name: string): Promise<NodeFacts | undefined>;
  /** Whether the API server holds any pod bound to `node` now (a LIST). */
  hasPodsOn(node: string): Promise<boolean>;
  releaseBlock(block: IPBlock): Promise<ReleaseOutcome>;
  deleteClaim(claim: IPClaim): Promise<ReleaseOutcome>;
  applyRange(spec: IPRangeSpec): Promise<IPRange>;
  updateRangeStatus(range: IPRange, status: IPRangeStatus): Promise<IPRange>;
}

export interface ReclaimerOptions {
  /** The networks' ranges in block mode (from ferryd's config; every node has the same). */
  ranges: readonly IPRangeSpec[];
  /** A node not Ready for longer than this is gone (default 1 h; 0: only deleted nodes are). */
  notReadyGraceSec?: number;
  /** NearlyExhausted when fewer than this share of a range's blocks is free (default 0.1). */
  nearlyExhaustedFraction?: number;
  log: Logger;
  now?: () => number;
}

export const DEFAULT_NOT_READY_GRACE_SEC = 3600;
const DEFAULT_NEARLY_EXHAUSTED_FRACTION = 0.1;

export type GoneWhy = 'deleted' | 'replaced' | 'not-ready';

/** A node whose objects may be reclaimed, and those objects. */
export interface GoneNode {
  node: string;
  why: GoneWhy;
  /** The uid the objects name as their owner (undefined when none names one). */
  ownerUid: string | undefined;
  blocks: IPBlock[];
  claims: IPClaim[];
}

const ownerUidOf = (o: IPBlock | IPClaim) =>
  o.metadata.ownerReferences?.find((r) => r.apiVersion === 'v1' && r.kind === 'Node')?.uid;

/** Why `node` counts as gone for objects owned by `ownerUid`, from what is known of it; undefined: it is not. */
export function verdictOf(
  facts: NodeFacts | undefined,
  ownerUid: string | undefined,
  nowMs: number,
  notReadyGraceSec: number,
): GoneWhy | undefined {
  if (!facts) return 'deleted';
  if (ownerUid !== undefined && facts.uid !== ownerUid) return 'replaced';
  if (
    notReadyGraceSec > 0 &&
    facts.notReadySinceMs !== undefined &&
    nowMs - facts.notReadySinceMs > notReadyGraceSec * 1000
  ) {
    return 'not-ready';
  }
  return undefined;
}

/** The nodes (by holder name and owner uid) whose blocks and claims are candidates for reclaiming. */
export function nodesToReclaim(
  blocks: readonly IPBlock[],
  claims: readonly IPClaim[],
  node: (name: string) => NodeFacts | undefined,
  nowMs: number,
  notReadyGraceSec: number,
): GoneNode[] {
  const gone = new Map<string, GoneNode>();
  const consider = (o: IPBlock | IPClaim, add: (g: GoneNode) => void) => {
    const ownerUid = ownerUidOf(o);
    const why = verdictOf(node(o.spec.node), ownerUid, nowMs, notReadyGraceSec);
    if (!why) return;
    const key = `${o.spec.node}/${ownerUid ?? ''}`;
    let g = gone.get(key);
    if (!g) {
      g = { node: o.spec.node, why, ownerUid, blocks: [], claims: [] };
      gone.set(key, g);
    }
    add(g);
  };
  for (const b of blocks) consider(b, (g) => g.blocks.push(b));
  for (const c of claims) consider(c, (g) => g.claims.push(c));
  return [...gone.values()];
}

/** Blocks a range has room for; ranges too large for a JSON-safe count say Number.MAX_SAFE_INTEGER. */
function blocksIn(spec: IPRangeSpec): number {
  const r = parseBlockCidr(spec.cidr, spec.family);
  if ('problem' in r || spec.blockPrefixLength < r.prefixLength) return 0;
  const bits = spec.blockPrefixLength - r.prefixLength;
  return bits >= 53 ? Number.MAX_SAFE_INTEGER : 2 ** bits;
}

/** The range's status from the blocks of its network and family; conditions keep their transition times. */
export function rangeStatusOf(
  spec: IPRangeSpec,
  blocks: readonly IPBlock[],
  previous: IPRangeStatus | undefined,
  nowIso: string,
  nearlyExhaustedFraction: number,
): IPRangeStatus {
  const mine = blocks.filter((b) => b.spec.network === spec.network && b.spec.family === spec.family);
  const releasing = mine.filter((b) => b.metadata.deletionTimestamp !== undefined);
  const held = mine.length - releasing.length;
  const total = blocksIn(spec);
  const free = Math.max(0, total - mine.length);
  const nearly = free < Math.max(1, Math.ceil(total * nearlyExhaustedFraction));
  const condition = (type: string, isTrue: boolean, reason: string, message: string): Condition => {
    const status = isTrue ? 'True' : 'False';
    const before = previous?.conditions?.find((c) => c.type === type);
    const lastTransitionTime = before && before.status === status ? before.lastTransitionTime : nowIso;
    return { type, status, reason, message, lastTransitionTime };
  };
  return {
    blocksTotal: total,
    blocksHeld: held,
    blocksFree: free,
    blocksReleasing: releasing.length,
    addressesAssigned: mine.reduce((n, b) => n + (b.status?.assigned ?? 0), 0),
    nodes: new Set(mine.map((b) => b.spec.node)).size,
    conditions: [
      condition(
        RangeCondition.Exhausted,
        free === 0,
        free === 0 ? 'NoFreeBlock' : 'FreeBlocks',
        `${free} of ${total} blocks free`,
      ),
      condition(
        RangeCondition.NearlyExhausted,
        nearly,
        nearly ? 'FewFreeBlocks' : 'FreeBlocks',
        `${free} of ${total} blocks free (threshold ${Math.round(nearlyExhaustedFraction * 100)} %)`,
      ),
    ],
  };
}

/** What one pass did. */
export interface PassReport {
  /** Blocks and claims given back, by name. */
  released: string[];
  /** Nodes gone whose objects stay because pods are still bound to them. */
  waitingForPods: string[];
  /** Ranges whose status was written. */
  rangesWritten: string[];
  /** Failures (the API server away, a refusal), one line each; the next pass tries again. */
  problems: string[];
}

export class Reclaimer {
  readonly #ports: ReclaimerPorts;
  readonly #ranges: readonly IPRangeSpec[];
  readonly #graceSec: number;
  readonly #nearly: number;
  readonly #log: Logger;
  readonly #now: () => number;

  constructor(ports: ReclaimerPorts, opts: ReclaimerOptions) {
    this.#ports = ports;
    this.#ranges = opts.ranges;
    this.#graceSec = opts.notReadyGraceSec ?? DEFAULT_NOT_READY_GRACE_SEC;
    this.#nearly = opts.nearlyExhaustedFraction ?? DEFAULT_NEARLY_EXHAUSTED_FRACTION;
    this.#log = opts.log;
    this.#now = opts.now ?? Date.now;
  }

  /** One look at the cluster: reclaims what may be reclaimed, writes range status; nothing once `signal` aborts. */
  async pass(signal: AbortSignal): Promise<PassReport> {
    const report: PassReport = { released: [], waitingForPods: [], rangesWritten: [], problems: [] };
    if (!this.#ports.hasSynced()) return report;
    const candidates = nodesToReclaim(
      this.#ports.blocks(),
      this.#ports.claims(),
      (n) => this.#ports.node(n),
      this.#now(),
      this.#graceSec,
    );
    for (const gone of candidates) {
      if (signal.aborted) return report;
      await this.#reclaim(gone, signal, report).catch((err: unknown) => {
        report.problems.push(`reclaim the objects of node ${gone.node}: ${problemOf(err)}`);
      });
    }
    for (const spec of this.#ranges) {
      if (signal.aborted) return report;
      await this.#writeRange(spec, signal, report).catch((err: unknown) => {
        report.problems.push(`write the status of range ${rangeNameOf(spec.network, spec.family)}: ${problemOf(err)}`);
      });
    }
    for (const problem of report.problems)
      this.#log.warn({ problem }, 'IPAM reclaimer: a step failed; the next pass tries again');
    return report;
  }

  async #reclaim(gone: GoneNode, signal: AbortSignal, report: PassReport): Promise<void> {
    // Fresh reads, right before acting: the caches may lag (a Node just created, a pod just bound).
    const why = verdictOf(await this.#ports.getNode(gone.node), gone.ownerUid, this.#now(), this.#graceSec);
    if (!why) return;
    if (await this.#ports.hasPodsOn(gone.node)) {
      report.waitingForPods.push(gone.node);
      return;
    }
    for (const block of gone.blocks) {
      if (signal.aborted) return;
      this.#released(report, block.metadata.name, gone, await this.#ports.releaseBlock(block));
    }
    for (const claim of gone.claims) {
      if (signal.aborted) return;
      this.#released(report, claim.metadata.name, gone, await this.#ports.deleteClaim(claim));
    }
  }

  #released(report: PassReport, name: string, gone: GoneNode, outcome: ReleaseOutcome): void {
    if (outcome === 'conflict') return;
    report.released.push(name);
    if (outcome === 'released')
      this.#log.info(
        { object: name, node: gone.node, why: gone.why },
        'IPAM reclaimer: released an object of a gone node',
      );
  }

  async #writeRange(spec: IPRangeSpec, signal: AbortSignal, report: PassReport): Promise<void> {
    const range = await this.#ports.applyRange(spec);
    const status = rangeStatusOf(
      spec,
      this.#ports.blocks(),
      range.status,
      new Date(this.#now()).toISOString().replace(/\.\d+Z$/, 'Z'),
      this.#nearly,
    );
    if (sameStatus(range.status, status) || signal.aborted) return;
    await this.#ports.updateRangeStatus(range, { ...status, observedGeneration: range.metadata.generation ?? 0 });
    report.rangesWritten.push(range.metadata.name);
  }
}

function sameStatus(a: IPRangeStatus | undefined, b: IPRangeStatus): boolean {
  if (!a) return false;
  const { observedGeneration: _o, ...rest } = a;
  return isDeepStrictEqual(rest, b);
}

const problemOf = (err: unknown) => (KubeApiError.is(err) ? err.message : describeApiError(err));
