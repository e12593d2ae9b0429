/**
 * The block manager: the one writer of the node's blocks (the `blocks` table and what IPAM hands out of).
 * It runs beside the API, never on an ADD's path while a block has room: after allocations and releases
 * (poke), after every change the IPBlock informer applies, and once a second, it counts what the node's
 * blocks hold, asks the planner (plan.ts) what to do, and does it through the API server:
 *
 * - a claim is a create-if-absent of the block's one name (candidates.ts picks free ones from the
 *   informer's cache); 409 AlreadyExists sends it to the next candidate;
 * - a release marks the block `releasing` in the same transaction that finds it empty (nothing is handed
 *   out of it from then on), then deletes the object; until the API server has answered, the row stays
 *   and the release is retried, across restarts;
 * - the node's blocks are re-learned from the informer (IPBlocks whose holder is this node), and an
 *   address the node uses outside every block it holds (adopted from the kernel, a /24 re-based) has its
 *   block claimed again; a block another node holds is a conflict: logged, counted, a doctor violation,
 *   and none of its addresses is handed out here.
 *
 * With the API server away the node goes on handing out addresses from the blocks it holds; claims and
 * releases wait (with a back-off) and nothing is lost. An ADD that finds no room waits (waitForRoom) for
 * the claim it causes, for a bounded time.
 */
import type { BlockRange } from '@ferry/shared-types/api/blocks';
import type { Violation } from '@ferry/shared-types/api/operator';
import type { Logger } from 'pino';
import { CoalescedRun } from '../../coalesced-run';
import { backoffDelayMs } from '../../kube/backoff';
import { describeApiError } from '../../kube/connection';
import type { BlockStore } from '../../store/blocks';
import { type Db, transactionRunner } from '../../store/db';
import type { PoolStore } from '../../store/pools';
import type { BlockRow } from '../../store/rows';
import { heldIn } from '../allocator';
import { type Cidr, contains, type Family, formatCidr, lastOf, overlaps, parseCidr, toBigInt } from '../cidr';
import type { Ipam } from '../ipam';
import { blockSizeIn, offsetHex, type PoolSpec } from '../pool';
import { findFreeBlocks } from './candidates';
import { type HeldBlock, planBlocks } from './plan';
import type { BlockApi, BlockView, ClusterBlock } from './ports';
import { judgeBlocks, type ValidityRules, type Verdict } from './validity';

/** How often the manager looks again without being poked (demand from the pod watch, empty-block ageing). */
const DEFAULT_TICK_MS = 1000;
/** Back-off after the API server failed a claim or a release. */
const API_BACKOFF = { initialMs: 250, maxMs: 10_000 };
/** A block's status is written when its validity changes, and its count at most this often (throttled). */
const STATUS_EVERY_MS = 10_000;
/** Candidates asked for beyond the claims wanted, so a few 409s do not need another search. */
const SPARE_CANDIDATES = 4;
/** How long a block another node was found to hold counts as taken before the informer shows it. */
const HELD_ELSEWHERE_MS = 60_000;

export type ClaimOutcomeLabel = 'claimed' | 'conflict' | 'exhausted' | 'error';

export interface BlockEvents {
  claim(network: string, family: Family, outcome: ClaimOutcomeLabel): void;
  release(network: string, family: Family): void;
}

export interface BlockManagerDeps {
  nodeName: string;
  db: Db;
  ipam: Ipam;
  pools: PoolStore;
  blocks: BlockStore;
  api: BlockApi;
  view: BlockView;
  nameOf: ValidityRules['nameOf'];
  /** Pods scheduled onto the node without an address of the network yet (from the pod watch); default none. */
  pendingOf?: (network: string) => number;
  /** Other Nodes' spec.podCIDRs: theirs while a cluster moves from podCIDRs to blocks. */
  foreignPodCIDRs?: () => readonly string[];
  events?: BlockEvents;
  log: Logger;
  now: () => number;
  tickMs?: number;
}

interface PoolState {
  network: string;
  family: Family;
  poolId: number;
  claiming: number;
  waiting: number;
  isRangeExhausted: boolean;
  lastError: string | null;
  failures: number;
  retryAtMs: number;
  conflicts: Map<string, string>;
  /**
   * Blocks a create-if-absent found held by another node (409 AlreadyExists), until the informer shows
   * them or HELD_ELSEWHERE_MS passed: taken at once, so the last block lost to another node makes the range
   * exhausted now (code 100 for the ADD waiting) rather than once the watch catches up.
   */
  heldElsewhere: Map<string, number>;
  free: number;
  pending: number;
  used: Map<string, number>;
}

type Waiter = { key: string; resolve: (r: RoomOutcome) => void; timer: NodeJS.Timeout };
export type RoomOutcome = 'room' | 'exhausted' | 'timeout';

const keyOf = (network: string, family: Family) => `${network}/IPv${family}`;

export class BlockManager {
  readonly #deps: BlockManagerDeps;
  readonly #tx: <T>(fn: () => T) => T;
  readonly #pools = new Map<string, PoolState>();
  /** Blocks created by this process that the informer has not shown yet: never forgotten for that. */
  readonly #recentlyClaimed = new Set<string>();
  readonly #waiters = new Set<Waiter>();
  readonly #heldListeners = new Set<() => void>();
  #verdicts = new Map<string, Verdict>();
  /** The view changed since the verdicts were made. */
  #isJudged = false;
  /** What was last written to each of this node's blocks' status, by name. */
  readonly #written = new Map<string, { assigned: number; valid: string; atMs: number }>();
  readonly #passes = new CoalescedRun(
    () => this.#pass(),
    () => this.#stopped,
  );
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(deps: BlockManagerDeps) {
    this.#deps = deps;
    this.#tx = transactionRunner(deps.db);
    for (const net of deps.ipam.networks()) {
      for (const { spec, poolId } of net.pools) {
        if (!spec.blocks) continue;
        this.#pools.set(keyOf(spec.network, spec.family), {
          network: spec.network,
          family: spec.family,
          poolId,
          claiming: 0,
          waiting: 0,
          isRangeExhausted: false,
          lastError: null,
          failures: 0,
          retryAtMs: 0,
          conflicts: new Map(),
          heldElsewhere: new Map(),
          free: 0,
          pending: 0,
          used: new Map(),
        });
      }
    }
    // The blocks held at the last stop serve ADDs at once, before the API server has been heard from.
    for (const p of this.#pools.values()) this.#applyHeld(p);
  }

  /** True when some network's pool is a range split into blocks. */
  get isActive(): boolean {
    return this.#pools.size > 0;
  }

  start(): void {
    if (!this.isActive) return;
    this.#deps.view.onChange(() => {
      this.#isJudged = false;
      this.poke();
    });
    this.#timer = setInterval(() => this.poke(), this.#deps.tickMs ?? DEFAULT_TICK_MS);
    this.#timer.unref();
    this.poke();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    for (const w of this.#waiters) this.#settle(w, 'timeout');
    await this.#passes.idle();
  }

  /** `listener` runs after every change of the blocks IPAM hands out of (a claim, a release, re-learning). */
  onHeldChanged(listener: () => void): void {
    this.#heldListeners.add(listener);
  }

  /** The blocks held of `network` (all families), as CIDR text. */
  heldOf(network: string): string[] {
    return [...this.#pools.values()]
      .filter((p) => p.network === network)
      .flatMap((p) => this.#deps.blocks.blocksOf(p.poolId).filter((b) => b.state === 'held'))
      .map((b) => b.cidr);
  }

  /** Look again soon (an allocation or a release changed the counts). Never waits. */
  poke(): void {
    void this.runSoon();
  }

  /** Starts a pass, or asks the running one to go again; resolves when no pass is due. */
  runSoon(): Promise<void> {
    return this.#passes.run();
  }

  /**
   * An ADD found the node's blocks of (network, family) full: resolves once a block with room is held
   * ('room'), the range has no block left to claim ('exhausted': code 100 for the ADD), or `timeoutMs`
   * passed ('timeout': code 11, the runtime tries again).
   */
  waitForRoom(network: string, family: Family, timeoutMs: number): Promise<RoomOutcome> {
    const key = keyOf(network, family);
    const pool = this.#pools.get(key);
    if (!pool) return Promise.resolve('timeout');
    return new Promise<RoomOutcome>((resolve) => {
      const waiter: Waiter = { key, resolve, timer: setTimeout(() => this.#settle(waiter, 'timeout'), timeoutMs) };
      this.#waiters.add(waiter);
      pool.waiting += 1;
      this.poke();
    });
  }

  /** Every range's state (ferryctl blocks, metrics). */
  status(): BlockRange[] {
    const view = this.#deps.view.hasSynced() ? this.#deps.view.blocks() : [];
    return [...this.#pools.values()].map((p) => {
      const spec = this.#specOf(p);
      const inRange = view.filter((b) => b.network === p.network && b.family === p.family);
      const settings = spec.blocks;
      const total = settings ? 1n << BigInt(settings.prefix - spec.subnet.prefix) : 0n;
      return {
        network: p.network,
        family: p.family,
        range: spec.subnetText,
        prefixLength: settings?.prefix ?? spec.subnet.prefix,
        blocks: this.#deps.blocks.blocksOf(p.poolId).map((b) => ({
          cidr: b.cidr,
          state: b.state,
          allocatable: Number(blockSizeIn(spec, parseCidr(b.cidr))),
          used: p.used.get(b.cidr) ?? 0,
          emptySince: b.empty_since_ms === null ? null : new Date(b.empty_since_ms).toISOString(),
        })),
        free: p.free,
        pending: p.pending,
        claiming: p.claiming,
        isRangeExhausted: p.isRangeExhausted,
        lastError: p.lastError,
        conflicts: [...p.conflicts.values()],
        cluster: {
          blocksTotal: total.toString(),
          blocksHeld: inRange.length,
          nodes: new Set(inRange.map((b) => b.node)).size,
        },
      };
    });
  }

  /** The conflicts of every range, as doctor violations. */
  violations(): Violation[] {
    return [...this.#pools.values()].flatMap((p) =>
      [...p.conflicts].map(([key, msg]) => ({
        kind: 'block-conflict' as const,
        subject: key.replace(/^invalid /, ''),
        msg: `network "${p.network}" IPv${p.family}: ${msg}`,
      })),
    );
  }

  /** The verdict on each IPBlock of the view, by name (routing leaves out those that are not valid). */
  verdicts(): ReadonlyMap<string, Verdict> {
    if (!this.#isJudged && this.#deps.view.hasSynced()) {
      this.#verdicts = judgeBlocks(this.#deps.view.blocks(), {
        rangeOf: (network, family) =>
          this.#pools.has(keyOf(network, family)) ? this.#specOfOrNone(network, family) : undefined,
        nameOf: this.#deps.nameOf,
      });
      this.#isJudged = true;
    }
    return this.#verdicts;
  }

  #specOf(p: PoolState): PoolSpec {
    const spec = this.#deps.ipam.network(p.network).pools.find((x) => x.spec.family === p.family)?.spec;
    if (!spec) throw new Error(`network "${p.network}" has no IPv${p.family} pool`);
    return spec;
  }

  /** IPAM hands out of the blocks the store holds (not those being released). */
  #applyHeld(p: PoolState): void {
    const held = this.#deps.blocks
      .blocksOf(p.poolId)
      .filter((b) => b.state === 'held')
      .map((b) => parseCidr(b.cidr));
    this.#deps.ipam.setBlocks(p.network, p.family, held);
    this.#wakeWaiters(p);
    for (const l of this.#heldListeners) l();
  }

  async #pass(): Promise<void> {
    const { view } = this.#deps;
    if (view.hasSynced()) {
      // Judged afresh every pass: cheap, and right even when no change event came (a view without them).
      this.#isJudged = false;
      this.verdicts();
      for (const p of this.#pools.values()) this.#relearn(p);
    }
    for (const p of this.#pools.values()) {
      try {
        await this.#passPool(p, view.hasSynced());
      } catch (err) {
        this.#failed(p, err);
      }
      this.#wakeWaiters(p);
    }
    if (view.hasSynced()) await this.#writeStatuses();
  }

  /**
   * The status of every IPBlock naming this node: `assigned` (throttled) and the `Valid` condition, so
   * `kubectl get ipblocks` says what ferryd thinks of each. A failure waits for the next pass.
   */
  async #writeStatuses(): Promise<void> {
    const { view, nodeName, pools, api, log } = this.#deps;
    const nowMs = this.#deps.now();
    const mine = view.blocks().filter((b) => b.node === nodeName);
    for (const b of mine) {
      const verdict = this.verdicts().get(b.name);
      if (!verdict) continue;
      const p = this.#pools.get(keyOf(b.network, b.family));
      const spec = p && this.#specOf(p);
      const assigned =
        verdict.isValid && p && spec
          ? pools.countHeld(
              p.poolId,
              offsetHex(spec, verdict.cidr.base),
              offsetHex(spec, lastOf(verdict.cidr)),
              Number.MAX_SAFE_INTEGER,
            )
          : 0;
      const valid = verdict.isValid
        ? { isValid: true, reason: 'Valid', message: `a block of ${spec?.subnetText ?? b.network} held by ${nodeName}` }
        : { isValid: false, reason: verdict.reason, message: verdict.message };
      const key = `${valid.isValid}/${valid.reason}`;
      const last = this.#written.get(b.name);
      const isDue = !last || last.valid !== key || (last.assigned !== assigned && nowMs - last.atMs >= STATUS_EVERY_MS);
      if (!isDue) continue;
      try {
        await api.writeStatus(b, { assigned, valid });
        this.#written.set(b.name, { assigned, valid: key, atMs: nowMs });
      } catch (err) {
        log.debug(
          { block: b.name, problem: describeApiError(err) },
          'block status not written; the next pass tries again',
        );
      }
    }
    for (const name of this.#written.keys()) if (!mine.some((b) => b.name === name)) this.#written.delete(name);
  }

  #specOfOrNone(network: string, family: Family): PoolSpec | undefined {
    return this.#deps.ipam
      .networks()
      .find((n) => n.config.name === network)
      ?.pools.find((x) => x.spec.family === family)?.spec;
  }

  /**
   * The informer is the record: a block it shows as this node's is held here (a database lost, a claim
   * answered after a crash), one it no longer shows is not (released by the reclaimer, deleted by hand:
   * its addresses, if any are in use, become orphans and claim it again, or are a conflict).
   */
  #relearn(p: PoolState): void {
    const { nodeName, blocks, log, now } = this.#deps;
    const mine = new Map<string, ClusterBlock>();
    // A hand-made block that is gone is no longer a conflict.
    const names = new Set(this.#deps.view.blocks().map((b) => `invalid ${b.name}`));
    for (const key of p.conflicts.keys()) if (key.startsWith('invalid ') && !names.has(key)) p.conflicts.delete(key);
    for (const b of this.#deps.view.blocks()) {
      if (b.node !== nodeName || b.network !== p.network || b.family !== p.family) continue;
      const verdict = this.#verdicts.get(b.name);
      if (verdict?.isValid) {
        mine.set(formatCidr(verdict.cidr), b);
        this.#recentlyClaimed.delete(b.name);
        p.conflicts.delete(`invalid ${b.name}`);
      } else if (verdict) {
        const message = `IPBlock ${b.name} (${b.cidr}) names this node but is not valid: ${verdict.message}; nothing is handed out of it`;
        if (!p.conflicts.has(`invalid ${b.name}`)) log.error({ block: b.name, cidr: b.cidr }, message);
        p.conflicts.set(`invalid ${b.name}`, message);
      }
    }
    const rows = blocks.blocksOf(p.poolId);
    let changed = false;
    this.#tx(() => {
      for (const [cidr, b] of mine) {
        const row = rows.find((r) => r.cidr === cidr);
        // The same object: held, or releasing (the release retries the delete).
        if (row && row.uid === b.uid) continue;
        blocks.hold({ poolId: p.poolId, cidr, name: b.name, uid: b.uid, nowMs: now() });
        log.info({ network: p.network, block: cidr }, 'block of this node re-learned from the API server');
        changed = true;
      }
      for (const row of rows) {
        if (mine.has(row.cidr) || this.#recentlyClaimed.has(row.name)) continue;
        blocks.forget(p.poolId, row.cidr);
        if (row.state === 'held')
          log.warn({ network: p.network, block: row.cidr }, 'block no longer held by this node in the API server');
        changed = true;
      }
    });
    if (changed) this.#applyHeld(p);
  }

  async #passPool(p: PoolState, isSynced: boolean): Promise<void> {
    const { now, blocks, pools } = this.#deps;
    const spec = this.#specOf(p);
    const settings = spec.blocks;
    if (!settings) return;
    const nowMs = now();
    const rows = blocks.blocksOf(p.poolId);
    const held: HeldBlock[] = [];
    this.#tx(() => {
      for (const row of rows) {
        const cidr = parseCidr(row.cidr);
        const used = pools.countHeld(p.poolId, offsetHex(spec, cidr.base), offsetHex(spec, lastOf(cidr)), nowMs);
        p.used.set(row.cidr, used);
        const emptySince = used === 0 ? (row.empty_since_ms ?? nowMs) : null;
        if (emptySince !== row.empty_since_ms) blocks.setEmptySince(p.poolId, row.cidr, emptySince);
        if (row.state === 'held')
          held.push({
            cidr: row.cidr,
            base: cidr.base,
            allocatable: Number(blockSizeIn(spec, cidr)),
            used,
            emptySinceMs: emptySince,
            claimedAtMs: row.claimed_at_ms,
          });
      }
    });
    p.pending = Math.max(this.#deps.pendingOf?.(p.network) ?? 0, p.waiting);
    if (!isSynced || nowMs < p.retryAtMs) {
      p.free = held.reduce((n, b) => n + b.allocatable - b.used, 0) - p.pending;
      return;
    }
    await this.#retryReleases(
      p,
      rows.filter((r) => r.state === 'releasing'),
    );
    const orphans = this.#orphanBlocks(p, spec, rows, nowMs);
    // Addresses no longer in use in another node's block: that conflict is over.
    for (const key of p.conflicts.keys())
      if (!key.startsWith('invalid ') && !orphans.includes(key)) p.conflicts.delete(key);
    const taken = this.#takenCidrs(p);
    const probe = findFreeBlocks({ spec, taken, seed: this.#seedOf(p), count: 1 });
    const wasExhausted = p.isRangeExhausted;
    p.isRangeExhausted = probe.length === 0;
    if (p.isRangeExhausted && !wasExhausted) {
      this.#deps.events?.claim(p.network, p.family, 'exhausted');
      this.#deps.log.warn({ network: p.network, range: spec.subnetText }, 'no block of the range is free to claim');
    }
    const plan = planBlocks({
      minFree: settings.minFree,
      maxFree: settings.maxFree,
      maxBlocks: settings.maxBlocks,
      releaseAfterMs: settings.releaseAfterMs,
      perBlock: Number(settings.blockAddresses) - 1,
      held,
      claiming: p.claiming,
      releasing: rows.length - held.length,
      pending: p.pending,
      orphanBlocks: orphans,
      isRangeExhausted: p.isRangeExhausted,
      nowMs,
    });
    p.free = plan.free;
    for (const cidr of plan.claimFirst) await this.#claimOrphanBlock(p, parseCidr(cidr));
    if (plan.claimNew > 0) await this.#claimNew(p, spec, plan.claimNew);
    if (plan.release) await this.#release(p, spec, plan.release);
    p.failures = 0;
    p.lastError = null;
  }

  /** The aligned blocks of addresses this node uses outside every block it holds. */
  #orphanBlocks(p: PoolState, spec: PoolSpec, rows: readonly BlockRow[], nowMs: number): string[] {
    const settings = spec.blocks;
    if (!settings) return [];
    const { pools } = this.#deps;
    const all = pools.countHeld(
      p.poolId,
      offsetHex(spec, spec.subnet.base),
      offsetHex(spec, lastOf(spec.subnet)),
      nowMs,
    );
    const inBlocks = rows.reduce((n, r) => n + (p.used.get(r.cidr) ?? 0), 0);
    if (all <= inBlocks) return [];
    const ours = rows.map((r) => parseCidr(r.cidr));
    const out = new Set<string>();
    for (const row of pools.list({ network: p.network }, nowMs)) {
      if (row.family !== p.family) continue;
      const n = toBigInt(row.address);
      if (!contains(spec.subnet, n) || ours.some((c) => contains(c, n))) continue;
      const size = settings.blockAddresses;
      const base = spec.subnet.base + ((n - spec.subnet.base) / size) * size;
      out.add(formatCidr({ family: p.family, base, prefix: settings.prefix, bits: spec.subnet.bits }));
    }
    return [...out].sort();
  }

  /** What no new block may overlap: every block the informer shows, other Nodes' pod CIDRs, our own rows. */
  #takenCidrs(p: PoolState): Cidr[] {
    const out: Cidr[] = [];
    const add = (text: string) => {
      try {
        out.push(parseCidr(text));
      } catch {
        // An unparsable CIDR takes nothing; validity.ts reports the block.
      }
    };
    const inView = new Set<string>();
    for (const b of this.#deps.view.blocks()) {
      if (b.family !== p.family) continue;
      add(b.cidr);
      inView.add(b.cidr);
    }
    const nowMs = this.#deps.now();
    for (const [cidr, untilMs] of p.heldElsewhere) {
      if (inView.has(cidr) || untilMs <= nowMs) p.heldElsewhere.delete(cidr);
      else add(cidr);
    }
    for (const c of this.#deps.foreignPodCIDRs?.() ?? []) add(c);
    for (const r of this.#deps.blocks.blocksOf(p.poolId)) add(r.cidr);
    return out;
  }

  #seedOf(p: PoolState): string {
    return `${this.#deps.nodeName}/${p.network}/${p.family}`;
  }

  async #claimOrphanBlock(p: PoolState, block: Cidr): Promise<void> {
    const text = formatCidr(block);
    const holder = this.#deps.view
      .blocks()
      .find((b) => b.family === p.family && this.#isValid(b) && overlaps(parseCidr(b.cidr), block));
    if (holder && holder.node !== this.#deps.nodeName) {
      this.#conflict(p, text, holder.node);
      return;
    }
    await this.#claim(p, block, 'orphan');
  }

  async #claimNew(p: PoolState, spec: PoolSpec, count: number): Promise<void> {
    const taken = this.#takenCidrs(p);
    const wanted = count + SPARE_CANDIDATES;
    // Inside the Node's own spec.podCIDRs first (a migration: the nodes not moved yet route only those).
    const own = (await this.#deps.api.ownPodCIDRs())
      .map(parseCidr)
      .filter((c) => c.family === p.family && contains(spec.subnet, c.base) && c.prefix <= (spec.blocks?.prefix ?? 0));
    const inOwn = own.flatMap((c) =>
      findFreeBlocks({ spec: { ...spec, subnet: c }, taken, seed: this.#seedOf(p), count: wanted }),
    );
    const candidates = [
      ...inOwn,
      ...findFreeBlocks({
        spec,
        taken: [...taken, ...inOwn],
        seed: this.#seedOf(p),
        count: Math.max(0, wanted - inOwn.length),
      }),
    ];
    let claimed = 0;
    for (const c of candidates) {
      if (claimed >= count) break;
      if (await this.#claim(p, c, 'new')) claimed++;
    }
    // Short of what was wanted: other nodes took the candidates; is anything left?
    if (claimed < count)
      p.isRangeExhausted =
        findFreeBlocks({ spec, taken: this.#takenCidrs(p), seed: this.#seedOf(p), count: 1 }).length === 0;
  }

  /** One create-if-absent; true when the node holds the block afterwards. */
  async #claim(p: PoolState, block: Cidr, why: 'new' | 'orphan'): Promise<boolean> {
    const { api, blocks, nodeName, log, now, events } = this.#deps;
    const cidr = formatCidr(block);
    p.claiming += 1;
    let outcome: Awaited<ReturnType<BlockApi['createBlock']>>;
    try {
      outcome = await api.createBlock({ network: p.network, family: p.family, cidr, node: nodeName });
    } catch (err) {
      events?.claim(p.network, p.family, 'error');
      throw err;
    } finally {
      p.claiming -= 1;
    }
    const got = 'created' in outcome ? outcome.created : outcome.exists?.node === nodeName ? outcome.exists : undefined;
    if (!got) {
      if ('exists' in outcome && outcome.exists) p.heldElsewhere.set(cidr, now() + HELD_ELSEWHERE_MS);
      events?.claim(p.network, p.family, 'conflict');
      log.info(
        { network: p.network, block: cidr, holder: 'exists' in outcome ? outcome.exists?.node : undefined },
        'block claimed by another node first; trying the next',
      );
      if (why === 'orphan' && 'exists' in outcome && outcome.exists) this.#conflict(p, cidr, outcome.exists.node);
      return false;
    }
    this.#recentlyClaimed.add(got.name);
    blocks.hold({ poolId: p.poolId, cidr, name: got.name, uid: got.uid, nowMs: now() });
    events?.claim(p.network, p.family, 'claimed');
    p.conflicts.delete(cidr);
    log.info({ network: p.network, family: p.family, block: cidr, why }, 'block claimed');
    this.#applyHeld(p);
    return true;
  }

  #conflict(p: PoolState, cidr: string, holder: string): void {
    const message = `addresses in use on this node lie in block ${cidr}, which node ${holder} holds: none of its addresses is handed out here; delete the pods using them (ferryctl ipam) or the block's object`;
    if (!p.conflicts.has(cidr)) {
      this.#deps.log.error({ network: p.network, block: cidr, holder }, message);
      this.#deps.events?.claim(p.network, p.family, 'conflict');
    }
    p.conflicts.set(cidr, message);
  }

  async #release(p: PoolState, spec: PoolSpec, cidr: string): Promise<void> {
    const { blocks, pools, now } = this.#deps;
    const block = parseCidr(cidr);
    // Empty (nothing assigned or cooling) in the same transaction that stops handing out of it.
    const marked = this.#tx(() => {
      const used = pools.countHeld(p.poolId, offsetHex(spec, block.base), offsetHex(spec, lastOf(block)), now());
      if (used > 0) return undefined;
      const row = blocks.blocksOf(p.poolId).find((r) => r.cidr === cidr && r.state === 'held');
      if (row) blocks.markReleasing(p.poolId, cidr);
      return row;
    });
    if (!marked) return;
    this.#applyHeld(p);
    this.#deps.log.info({ network: p.network, block: cidr }, 'giving an empty block back');
    await this.#retryReleases(p, [{ ...marked, state: 'releasing' }]);
  }

  async #retryReleases(p: PoolState, rows: readonly BlockRow[]): Promise<void> {
    const { api, blocks, nodeName, events, log } = this.#deps;
    for (const row of rows) {
      const outcome = await api.releaseBlock({
        name: row.name,
        uid: row.uid,
        network: p.network,
        family: p.family,
        cidr: row.cidr,
        node: nodeName,
        isDeleting: false,
      });
      if (outcome === 'conflict') log.warn({ block: row.name }, 'the released block is no longer the one claimed');
      blocks.forget(p.poolId, row.cidr);
      p.used.delete(row.cidr);
      events?.release(p.network, p.family);
    }
  }

  #isValid(b: ClusterBlock): boolean {
    return this.verdicts().get(b.name)?.isValid === true;
  }

  #failed(p: PoolState, err: unknown): void {
    p.failures += 1;
    p.lastError = describeApiError(err);
    const delayMs = backoffDelayMs(p.failures, API_BACKOFF);
    p.retryAtMs = this.#deps.now() + delayMs;
    this.#deps.log.warn(
      { network: p.network, family: p.family, problem: p.lastError, retryInMs: delayMs },
      'claiming or releasing blocks failed; the blocks held serve meanwhile',
    );
    setTimeout(() => this.poke(), delayMs).unref();
  }

  #wakeWaiters(p: PoolState): void {
    const key = keyOf(p.network, p.family);
    for (const w of this.#waiters) {
      if (w.key !== key) continue;
      if (this.#hasRoom(p)) this.#settle(w, 'room');
      else if (p.isRangeExhausted && p.claiming === 0) this.#settle(w, 'exhausted');
    }
  }

  #hasRoom(p: PoolState): boolean {
    const spec = this.#specOf(p);
    return spec.size > heldIn(this.#deps.pools, spec, p.poolId, this.#deps.now());
  }

  #settle(w: Waiter, outcome: RoomOutcome): void {
    if (!this.#waiters.delete(w)) return;
    clearTimeout(w.timer);
    const p = this.#pools.get(w.key);
    if (p) p.waiting -= 1;
    w.resolve(outcome);
  }
}
