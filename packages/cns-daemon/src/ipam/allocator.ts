/**
 * Picks addresses. Round-robin from the pool's cursor (the last address handed out), as host-local
 * does, so a just-released address is the last to come back; PendingRelease addresses stay unavailable
 * until their cooldown has passed and their row is swept. Must run inside the caller's transaction.
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
  // A range that exclusions cover entirely has no candidate to start from.
  if (spec.size === 0n) throw exhausted(spec);
  // Cooled-down rows go first, so a row means the address cannot be handed out, and after a few probes a
  // count of the rows tells a full pool from a busy stretch without walking the whole range.
  pools.sweepPool(poolId, nowMs);
  let candidate =
    cursorHex === null ? nextCandidate(spec, spec.start - 1n) : nextCandidate(spec, addressOfHex(spec, cursorHex));
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
 * Held addresses inside the allocatable range: rows outside it (left by an earlier, wider range) or in
 * an exclusion do not use up the pool.
 */
export function heldIn(pools: PoolStore, spec: PoolSpec, poolId: number, nowMs: number): bigint {
  const count = (lo: bigint, hi: bigint) =>
    BigInt(pools.countHeld(poolId, offsetHex(spec, lo), offsetHex(spec, hi), nowMs));
  let held = count(spec.start, spec.end);
  for (const [lo, hi] of spec.exclusions) held -= count(lo, hi);
  return held;
}

function exhausted(spec: PoolSpec): CniError {
  return new CniError(
    Code.PoolExhausted,
    `allocate IPv${spec.family} address on network "${spec.network}": pool ${spec.subnetText} is exhausted`,
    `${spec.size} allocatable addresses, all assigned or cooling down`,
  );
}
