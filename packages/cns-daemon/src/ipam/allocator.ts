/**
 * Picks addresses. Round-robin from the pool's cursor (the last address handed out), as host-local
 * does, so a just-released address is the last to come back; PendingRelease addresses stay unavailable
 * until their cooldown has passed and their row is swept. Must run inside the caller's transaction. In
 * cluster IPAM the candidates are the blocks the node holds (the spec's intervals), and a full set of
 * blocks is not an exhausted pool: NoRoomInBlocks (code 11) says a block is to be claimed first.
 */
import { CniError, Code } from '@ferry/shared-types/errors';
import type { PoolStore } from '../store/pools';
import { fromBigInt } from './cidr';
import { addressOfHex, nextCandidate, offsetHex, type PoolSpec } from './pool';

export interface Picked {
  offsetHex: string;
  address: string;
}

/**
 * Probes this many candidates before counting the pool: a free address is almost always among the first
 * few, and the count reads every held row of the range.
 */
const PROBES_BEFORE_COUNT = 32n;

/** Finds a free address in `spec`'s pool, moves the cursor to it and returns it. Throws PoolExhausted. */
export function pickFree(
  pools: PoolStore,
  spec: PoolSpec,
  poolId: number,
  cursorHex: string | null,
  nowMs: number,
): Picked {
  // A range that exclusions cover entirely has no candidate to start from (nor a node without blocks).
  const first = spec.intervals[0];
  if (spec.size === 0n || !first) throw exhausted(spec);
  // Cooled-down rows go first, so a row means the address cannot be handed out, and after a few probes a
  // count of the rows tells a full pool from a busy stretch without walking the whole range.
  pools.sweepPool(poolId, nowMs);
  let candidate =
    cursorHex === null ? nextCandidate(spec, first[0] - 1n) : nextCandidate(spec, addressOfHex(spec, cursorHex));
  // Once the count says a free candidate exists, the lap bound only guards against a store changed under us.
  for (let steps = 0n; steps < spec.size; steps++) {
    if (steps === PROBES_BEFORE_COUNT && heldIn(pools, spec, poolId, nowMs) >= spec.size) throw exhausted(spec);
    const hex = offsetHex(spec, candidate);
    if (!pools.hasAddress(poolId, hex)) {
      pools.setCursor(poolId, hex);
      return { offsetHex: hex, address: fromBigInt(candidate, spec.family) };
    }
    candidate = nextCandidate(spec, candidate);
  }
  throw exhausted(spec);
}

/**
 * Held addresses inside the allocatable intervals: rows outside them (left by an earlier, wider range, in
 * an exclusion, or in a block no longer held) do not use up the pool.
 */
export function heldIn(pools: PoolStore, spec: PoolSpec, poolId: number, nowMs: number): bigint {
  let held = 0n;
  for (const [lo, hi] of spec.intervals)
    held += BigInt(pools.countHeld(poolId, offsetHex(spec, lo), offsetHex(spec, hi), nowMs));
  return held;
}

/**
 * The node's blocks of a range have no free address: not an exhausted pool (a block may still be
 * claimed), so code 11 until the block manager says the range itself is exhausted (ipam/room.ts).
 */
export class NoRoomInBlocks extends CniError {
  readonly network: string;
  readonly family: 4 | 6;
  /** How long an ADD may wait for a claim (the range's `blocks.waitMs`). */
  readonly waitMs: number;
  readonly range: string;
  constructor(spec: PoolSpec) {
    super(
      Code.TryAgainLater,
      `allocate IPv${spec.family} address on network "${spec.network}": the node's blocks of ${spec.subnetText} are full; try again once a block is claimed`,
      `${spec.size} addresses in the blocks held, all assigned or cooling down`,
    );
    this.name = 'NoRoomInBlocks';
    this.network = spec.network;
    this.family = spec.family;
    this.waitMs = spec.blocks?.waitMs ?? 0;
    this.range = spec.subnetText;
  }
}

function exhausted(spec: PoolSpec): CniError {
  if (spec.blocks) return new NoRoomInBlocks(spec);
  return new CniError(
    Code.PoolExhausted,
    `allocate IPv${spec.family} address on network "${spec.network}": pool ${spec.subnetText} is exhausted`,
    `${spec.size} allocatable addresses, all assigned or cooling down`,
  );
}
