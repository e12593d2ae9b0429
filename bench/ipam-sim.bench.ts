/// <reference types="bun-types" />
/**
 * Cluster IPAM at scale, simulated: NODES simulated nodes against the stand-in API server (a real process,
 * serving deploy/crds), each a block manager over an in-memory pool. A node's decisions are the ipam
 * helper's pure planner and candidate walk (ipam/blocks/plan.ts planBlocks, candidates.ts findFreeBlocks,
 * used as they are), its API calls are IpamApi's over real HTTP (create-if-absent, release by uid), its
 * view of the cluster's IPBlocks is a real informer (one, shared by every simulated node: each ferryd
 * watches every IPBlock, so the stand-in's per-watch event count × NODES is the fleet's). The leader's
 * reclaimer runs too (ReclaimerService: IPRange status, reclaiming deleted nodes).
 *
 * Time is simulated in ticks of TICK_SEC (the planner's clock: releaseAfterSec, empty-since), wall time
 * only for what the API server costs. Each tick every node's pods change (CHURN of them end, new ones
 * come to the target), new pods are scheduled (pending: the pod watch shows them before their ADD) and
 * admitted from the node's blocks; then every node's planner runs and its claims and releases are made,
 * at most CONCURRENCY calls in flight. Phases: a cold start (every node joins at once), steady state
 * (PODS per node, churning), scaling (the target ramps to SCALE × PODS and back), a lone node joining,
 * and DELETE_NODES nodes deleted (their blocks reclaimed by the leader: no pod of theirs is in the API).
 *
 * Reported: IPAM API requests and IPBlock watch events per pod start, per phase; the time a node waits
 * for its first block (burst and lone); the range's use and each node's wasted addresses (held and not
 * used) against CNS's m·N..M·N bound (m = minFree, M = maxFree per node); /proc/loadavg.
 *
 *   pnpm --filter @ferry/bench bench:ipam-sim      (NODES=100; NODES=1000, NODES=5000 for the large runs)
 */
import { readFileSync } from 'node:fs';
import pino from 'pino';
import { findFreeBlocks } from '../packages/cns-daemon/src/ipam/blocks/candidates';
import { type HeldBlock, planBlocks } from '../packages/cns-daemon/src/ipam/blocks/plan';
import { type Cidr, formatCidr, parseCidr } from '../packages/cns-daemon/src/ipam/cidr';
import { poolSpecsOf } from '../packages/cns-daemon/src/ipam/pool';
import { ReclaimerService } from '../packages/cns-daemon/src/ipam/reclaimer-service';
import { KubeApiError } from '../packages/cns-daemon/src/kube/api-error';
import { loadKubeConfig } from '../packages/cns-daemon/src/kube/connection';
import { IpamApi } from '../packages/cns-daemon/src/kube/ipam-api';
import { NetworkConfigSchema } from '../packages/shared-types/src/config/ferryd';
import type { IPBlock } from '../packages/shared-types/src/kube/ipam';
import { manualScope } from '../test/fixtures/scope';
import { fmt, median, percentile, printTable } from './lib/stats';

const { nodeObject, useKubeApi } = await import('../test/fixtures/kube-api');

const NODES = Number(process.env.NODES ?? 100);
const PODS = Number(process.env.PODS ?? 30);
const CHURN = Number(process.env.CHURN ?? 0.05);
const SCALE = Number(process.env.SCALE ?? 3);
const TICK_SEC = Number(process.env.TICK_SEC ?? 10);
const STEADY_TICKS = Number(process.env.STEADY_TICKS ?? 60);
const RAMP_TICKS = Number(process.env.RAMP_TICKS ?? 20);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 64);
const DELETE_NODES = Number(process.env.DELETE_NODES ?? Math.max(1, Math.round(NODES / 100)));
const RANGE = process.env.RANGE ?? '10.0.0.0/10';
const BLOCK_PREFIX = Number(process.env.BLOCK_PREFIX ?? 26);
const RELEASE_AFTER_SEC = Number(process.env.RELEASE_AFTER_SEC ?? 300);
/** After the scale-down, churn goes on until the nodes hold no more blocks than in steady state, or this many ticks. */
const SETTLE_MAX_TICKS = Number(process.env.SETTLE_MAX_TICKS ?? 400);

const network = NetworkConfigSchema.parse({
  name: 'ferry',
  ipv4: { subnet: RANGE, blocks: { prefixLength: BLOCK_PREFIX, releaseAfterSec: RELEASE_AFTER_SEC } },
});
const [firstSpec] = poolSpecsOf(network);
if (!firstSpec?.blocks) throw new Error('no block settings');
const spec = firstSpec;
const settings = firstSpec.blocks;
/** A block hands out all but its first address (pool.ts withBlocks). */
const PER_BLOCK = Number(settings.blockAddresses) - 1;

/** At most `limit` of the given jobs at once. */
async function limited<T>(jobs: (() => Promise<T>)[], limit: number): Promise<T[]> {
  const out: T[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, jobs.length) }, async () => {
      while (next < jobs.length) {
        const i = next++;
        const job = jobs[i];
        if (job) out[i] = await job();
      }
    }),
  );
  return out;
}

interface SimBlock {
  object: IPBlock;
  cidr: Cidr;
  used: number;
  /** Freed this tick: still counted as used (ferryd's cooling), free next tick. */
  cooling: number;
  emptySinceMs: number | null;
  claimedAtMs: number;
}

class SimNode {
  readonly blocks = new Map<string, SimBlock>();
  running = 0;
  pending = 0;
  joinedAtMs = 0;
  firstBlockMs: number | undefined;
  deleted = false;
  conflicts = 0;
  /** Calls that failed as the API server being away (a reset connection, a timeout): retried next tick, as the block manager does. */
  apiErrors = 0;

  constructor(
    readonly name: string,
    readonly uid: string,
  ) {}

  capacity(): number {
    return this.blocks.size * PER_BLOCK;
  }

  /** Pods scheduled onto the node get addresses where a block has room (the ADD: local, no API call). */
  admit(): number {
    let admitted = 0;
    for (const b of [...this.blocks.values()].sort((x, y) => (x.cidr.base < y.cidr.base ? -1 : 1))) {
      while (this.pending > 0 && b.used + b.cooling < PER_BLOCK) {
        b.used += 1;
        b.emptySinceMs = null;
        this.pending -= 1;
        this.running += 1;
        admitted += 1;
      }
    }
    return admitted;
  }

  /** `n` running pods, chosen at random, end; their addresses cool for a tick. */
  end(n: number): void {
    const blocks = [...this.blocks.values()];
    for (let i = 0; i < n && this.running > 0; i++) {
      // A random pod, not a random block: a block with more pods loses more of them.
      let k = Math.floor(Math.random() * this.running);
      const b = blocks.find((x) => {
        k -= x.used;
        return k < 0;
      });
      if (!b) break;
      b.used -= 1;
      b.cooling += 1;
      this.running -= 1;
    }
  }

  tickCooling(nowMs: number): void {
    for (const b of this.blocks.values()) {
      b.cooling = 0;
      if (b.used === 0 && b.emptySinceMs === null) b.emptySinceMs = nowMs;
    }
  }

  held(): HeldBlock[] {
    return [...this.blocks.values()].map((b) => ({
      cidr: formatCidr(b.cidr),
      base: b.cidr.base,
      allocatable: PER_BLOCK,
      used: b.used + b.cooling,
      emptySinceMs: b.emptySinceMs,
      claimedAtMs: b.claimedAtMs,
    }));
  }
}

interface PhaseStats {
  podStarts: number;
  requests: number;
  requestsByVerb: Map<string, number>;
  blockEvents: number;
  wallMs: number;
}

const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

async function main() {
  const scope = manualScope();
  const log = pino({ level: process.env.LOG ?? 'silent' });
  const loadStart = load();
  try {
    const api = await useKubeApi(scope);
    const kc = loadKubeConfig(api.kubeconfig);
    const ipam = new IpamApi({ kc, timeoutMs: 60_000 });
    const names = Array.from({ length: NODES + 1 }, (_, i) => `node-${String(i).padStart(5, '0')}`);
    await api.putMany(names.map((n, i) => nodeObject(n, [`10.200.${i >> 8}.${i & 255}`], [])));
    const nodeList = (await (await fetch(`${api.url}/api/v1/nodes`)).json()) as {
      items: { metadata: { name: string; uid: string } }[];
    };
    const uidOf = new Map(nodeList.items.map((i) => [i.metadata.name, i.metadata.uid]));
    const nodes = names.slice(0, NODES).map((n) => new SimNode(n, uidOf.get(n) ?? ''));
    const lone = new SimNode(names[NODES] ?? 'lone', uidOf.get(names[NODES] ?? '') ?? '');

    const cache = ipam.blockCache(log);
    cache.start();
    scope.onTestFinished(() => cache.stop());
    while (!cache.hasSynced()) await Bun.sleep(20);
    const reclaimer = new ReclaimerService({
      kc,
      api: ipam,
      nodeName: 'leader',
      ranges: [{ network: 'ferry', family: 4, cidr: spec.subnetText, blockPrefixLength: settings.prefix }],
      blocks: cache,
      log,
      intervalMs: 5_000,
    });
    reclaimer.start();
    scope.onTestFinished(() => reclaimer.stop());
    while (!reclaimer.isLeader()) await Bun.sleep(50);

    let nowMs = Date.UTC(2026, 11, 1);
    /** Claims made but not yet in the informer's view, so a node does not ask for its own block twice. */
    const inFlight = new Set<string>();
    // The informer's view, parsed once per change (as a block manager keeps it), plus the claims in flight.
    let seen: Cidr[] | undefined;
    cache.onChange(() => {
      seen = undefined;
    });
    const taken = (): Cidr[] => {
      seen ??= cache.list().map((b) => parseCidr(b.spec.cidr));
      return [...seen, ...[...inFlight].map((c) => parseCidr(c))];
    };

    /** One node's planner pass and its API calls. */
    const planJobs = (list: SimNode[]): (() => Promise<void>)[] =>
      list
        .filter((n) => !n.deleted)
        .map(
          (n) => () =>
            planPass(n).catch((err: unknown) => {
              if (!KubeApiError.is(err) || !err.isRetryable) throw err;
              n.apiErrors += 1;
            }),
        );
    const planPass = async (n: SimNode): Promise<void> => {
      const plan = planBlocks({
        minFree: settings.minFree,
        maxFree: settings.maxFree,
        maxBlocks: settings.maxBlocks,
        releaseAfterMs: settings.releaseAfterMs,
        perBlock: PER_BLOCK,
        held: n.held(),
        claiming: 0,
        releasing: 0,
        pending: n.pending,
        orphanBlocks: [],
        isRangeExhausted: false,
        nowMs,
      });
      let wanted = plan.claimNew;
      let tries = 0;
      while (wanted > 0 && tries < 8) {
        tries += 1;
        const candidates = findFreeBlocks({ spec, taken: taken(), seed: `${n.name}/ferry/4`, count: wanted });
        if (candidates.length === 0) break;
        for (const c of candidates) {
          const cidr = formatCidr(c);
          inFlight.add(cidr);
          try {
            const r = await ipam.createBlock({ network: 'ferry', family: 4, cidr, node: n.name }, n.uid);
            if ('created' in r) {
              n.blocks.set(cidr, {
                object: r.created,
                cidr: c,
                used: 0,
                cooling: 0,
                emptySinceMs: nowMs,
                claimedAtMs: nowMs,
              });
              n.firstBlockMs ??= performance.now() - n.joinedAtMs;
              wanted -= 1;
            } else n.conflicts += 1;
          } finally {
            inFlight.delete(cidr);
          }
        }
      }
      if (plan.release) {
        const b = n.blocks.get(plan.release);
        if (b && (await ipam.releaseBlock(b.object)) !== 'conflict') n.blocks.delete(plan.release);
      }
    };

    const snapshot = async () => {
      const s = await api.briefStats();
      const ipamRequests = s.requestCounts.filter((c) => c.group === 'ferry.dev');
      return {
        requests: ipamRequests,
        blockEvents: s.watchEvents
          .filter((e) => e.resource === 'ipblocks' && e.type !== 'BOOKMARK')
          .reduce((n, e) => n + e.count, 0),
      };
    };
    const phase = async (run: () => Promise<number>): Promise<PhaseStats> => {
      const before = await snapshot();
      const t0 = performance.now();
      const podStarts = await run();
      const wallMs = performance.now() - t0;
      // Let the informer and the leader see the last changes before counting.
      await Bun.sleep(300);
      const after = await snapshot();
      const byVerb = new Map<string, number>();
      let requests = 0;
      for (const c of after.requests) {
        const was = before.requests.find((b) => b.verb === c.verb && b.resource === c.resource)?.count ?? 0;
        if (c.count > was) byVerb.set(`${c.verb} ${c.resource}`, c.count - was);
        requests += c.count - was;
      }
      return {
        podStarts,
        requests,
        requestsByVerb: byVerb,
        blockEvents: after.blockEvents - before.blockEvents,
        wallMs,
      };
    };

    /** One tick: pods end and come to `target` per node, are admitted, planners run, then admit again. */
    const tick = async (target: (n: SimNode) => number): Promise<number> => {
      nowMs += TICK_SEC * 1000;
      let starts = 0;
      for (const n of nodes) {
        if (n.deleted) continue;
        n.tickCooling(nowMs);
        // Pods end by churn, and above the target (a scale-down) the surplus ends too.
        const surplus = Math.max(0, n.running - target(n));
        n.end(surplus + Math.round((n.running - surplus) * CHURN * (0.5 + Math.random())));
        const want = Math.max(0, target(n) - n.running - n.pending);
        n.pending += want;
        starts += n.admit();
      }
      await limited(planJobs(nodes), CONCURRENCY);
      for (const n of nodes) if (!n.deleted) starts += n.admit();
      return starts;
    };
    const jitter = (n: SimNode) => (n.name.charCodeAt(n.name.length - 1) % 7) - 3;

    // Cold start: every node joins at once and claims its first block.
    const cold = await phase(async () => {
      const t0 = performance.now();
      for (const n of nodes) n.joinedAtMs = t0;
      await limited(planJobs(nodes), CONCURRENCY);
      return 0;
    });
    const firstBlock = nodes.map((n) => n.firstBlockMs ?? Number.NaN);
    // Fill to PODS per node, then steady churn.
    await phase(async () => {
      let s = 0;
      for (let i = 0; i < 5; i++) s += await tick((n) => PODS + jitter(n));
      return s;
    });
    const steady = await phase(async () => {
      let s = 0;
      for (let i = 0; i < STEADY_TICKS; i++) s += await tick((n) => PODS + jitter(n));
      return s;
    });
    const useSteady = rangeUse(nodes);
    let peak = useSteady;
    const scaling = await phase(async () => {
      let s = 0;
      for (let i = 1; i <= RAMP_TICKS; i++)
        s += await tick((n) => Math.round((PODS + jitter(n)) * (1 + ((SCALE - 1) * i) / RAMP_TICKS)));
      peak = rangeUse(nodes);
      for (let i = RAMP_TICKS - 1; i >= 0; i--)
        s += await tick((n) => Math.round((PODS + jitter(n)) * (1 + ((SCALE - 1) * i) / RAMP_TICKS)));
      return s;
    });
    const useDown = rangeUse(nodes);
    // A block goes back only once empty (and empty for releaseAfterSec): after the scale-down the pods
    // left are spread over the blocks, and churn drains the higher ones (ADDs take the lowest block first).
    let settleTicks = 0;
    const settling = await phase(async () => {
      let s = 0;
      while (settleTicks < SETTLE_MAX_TICKS && rangeUse(nodes).blocks > useSteady.blocks) {
        s += await tick((n) => PODS + jitter(n));
        settleTicks += 1;
      }
      return s;
    });
    const useAfter = rangeUse(nodes);
    // A node joins the steady cluster: its first block, measured alone.
    lone.joinedAtMs = performance.now();
    await limited(planJobs([lone]), 1);
    const loneFirstMs = lone.firstBlockMs ?? Number.NaN;
    // Nodes deleted: the garbage collector marks their blocks, the leader releases them (no pods in the API).
    const victims = nodes.slice(0, DELETE_NODES);
    const victimBlocks = victims.reduce((k, n) => k + n.blocks.size, 0);
    const t0 = performance.now();
    for (const v of victims) {
      v.deleted = true;
      await api.delete(v.name);
    }
    const victimNames = new Set(victims.map((v) => v.name));
    while (cache.list().some((b) => victimNames.has(b.spec.node))) await Bun.sleep(50);
    const reclaimMs = performance.now() - t0;
    const range = await ipam.getRange('ferry', 4);
    const loadEnd = load();

    const perStart = (p: PhaseStats, n: number) => (p.podStarts > 0 ? fmt(n / p.podStarts, 4) : '-');
    const phases: [string, PhaseStats][] = [
      ['cold start (every node joins)', cold],
      ['steady state', steady],
      ['scaling (×SCALE and back)', scaling],
      ['settling (churn until blocks go back)', settling],
    ];
    printTable(
      `IPAM API and IPBlock watch per pod start (NODES=${NODES}, PODS=${PODS}, CHURN=${CHURN}, SCALE=${SCALE}, /${BLOCK_PREFIX} blocks of ${RANGE}, minFree ${settings.minFree}, maxFree ${settings.maxFree}, releaseAfter ${RELEASE_AFTER_SEC} s, tick ${TICK_SEC} s)`,
      [
        'phase',
        'pod starts',
        'API requests',
        'per pod start',
        'events/watch',
        'per pod start/watch',
        `fleet events per pod start (×${NODES} watching nodes)`,
        'wall s',
      ],
      phases.map(([label, p]) => [
        label,
        String(p.podStarts),
        String(p.requests),
        perStart(p, p.requests),
        String(p.blockEvents),
        perStart(p, p.blockEvents),
        p.podStarts > 0 ? fmt((p.blockEvents * NODES) / p.podStarts, 2) : '-',
        fmt(p.wallMs / 1000, 1),
      ]),
    );
    for (const [label, p] of phases) {
      const verbs = [...p.requestsByVerb].map(([k, v]) => `${k} ${v}`).join(', ') || 'none';
      console.log(`  ${label} requests: ${verbs} (${fmt(p.requests / NODES, 2)} per node)`);
    }
    printTable(
      'time for a node to get its first block (wall ms; the API server and HTTP only)',
      ['case', 'p50', 'p95', 'max', 'conflicts (409)', 'API away (retried)'],
      [
        [
          `${NODES} nodes at once (${CONCURRENCY} calls in flight)`,
          fmt(median(firstBlock)),
          fmt(percentile(firstBlock, 95)),
          fmt(Math.max(...firstBlock)),
          String(nodes.reduce((k, n) => k + n.conflicts, 0)),
          String(nodes.reduce((k, n) => k + n.apiErrors, 0)),
        ],
        [
          'one node joining the steady cluster',
          fmt(loneFirstMs),
          '-',
          '-',
          String(lone.conflicts),
          String(lone.apiErrors),
        ],
      ],
    );
    const uses: [string, RangeUse][] = [
      ['steady state', useSteady],
      ['scaled up (peak)', peak],
      ['right after the scale-down', useDown],
      [`settled (${settleTicks} ticks = ${fmt((settleTicks * TICK_SEC) / 60, 0)} min later)`, useAfter],
    ];
    printTable(
      `range use and wasted addresses (held, not used) per node; CNS bound m·N..M·N = ${settings.minFree * NODES}..${settings.maxFree * NODES} (m=${settings.minFree}, M=${settings.maxFree})`,
      ['when', 'blocks', 'addresses held', 'used', 'wasted', 'wasted/node p50', 'p95', 'max', 'nodes in [m, M]'],
      uses.map(([label, x]) => [
        label,
        String(x.blocks),
        String(x.held),
        String(x.used),
        String(x.held - x.used),
        String(x.wastedP50),
        String(x.wastedP95),
        String(x.wastedMax),
        `${x.within}/${x.nodes}`,
      ]),
    );
    console.log(
      `\nreclaim: ${DELETE_NODES} nodes deleted holding ${victimBlocks} blocks; all released by the leader in ${fmt(reclaimMs, 0)} ms; IPRange status: ${JSON.stringify({ ...range?.status, conditions: range?.status?.conditions?.map((c) => `${c.type}=${c.status}`) })}`,
    );
    console.log(
      `load average: ${loadStart} at start, ${loadEnd} at end (${process.env.NODES ? '' : 'NODES default '}N=${NODES})`,
    );
  } finally {
    await scope.runCleanups();
  }
}

interface RangeUse {
  nodes: number;
  blocks: number;
  held: number;
  used: number;
  wastedP50: number;
  wastedP95: number;
  wastedMax: number;
  within: number;
}

function rangeUse(nodes: readonly SimNode[]): RangeUse {
  const live = nodes.filter((n) => !n.deleted);
  const wasted = live.map((n) => n.capacity() - n.running);
  return {
    nodes: live.length,
    blocks: live.reduce((k, n) => k + n.blocks.size, 0),
    held: live.reduce((k, n) => k + n.capacity(), 0),
    used: live.reduce((k, n) => k + n.running, 0),
    wastedP50: median(wasted),
    wastedP95: percentile(wasted, 95),
    wastedMax: Math.max(...wasted),
    within: wasted.filter((w) => w >= settings.minFree && w <= settings.maxFree).length,
  };
}

await main();
