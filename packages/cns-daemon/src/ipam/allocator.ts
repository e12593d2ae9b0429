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

/** Finds a free address in `spec`'s pool, moves the cursor to it and returns it. Throws PoolExhausted. */
export function pickFree(
  pools: PoolStore,
  spec: PoolSpec,
  poolId: number,
  cursorHex: string | null,
  nowMs: number,
): Picked {
  // Cooled-down rows go first, so every remaining row is an address that cannot be handed out: the
  // count is then exact, and exhaustion is known without walking the pool.
  pools.sweepPool(poolId, nowMs);
  if (BigInt(pools.countHeld(poolId)) >= spec.size) throw exhausted(spec);
  let candidate =
    cursorHex === null ? nextCandidate(spec, spec.start - 1n) : nextCandidate(spec, addressOfHex(spec, cursorHex));
  // At most one full lap: the count above says a free address exists, unless rows outside the
  // range (left by an earlier, wider config) were counted; the lap bound makes that case fail cleanly.
  for (let steps = 0n; steps < spec.size; steps++) {
    const hex = offsetHex(spec, candidate);
    if (!pools.getAddress(poolId, hex)) {
      pools.setCursor(poolId, hex);
      return { offsetHex: hex, address: fromBigInt(candidate, spec.family) };
    }
    candidate = nextCandidate(spec, candidate);
  }
  throw exhausted(spec);
}

function exhausted(spec: PoolSpec): CniError {
  return new CniError(
    Code.PoolExhausted,
    `allocate IPv${spec.family} address on network "${spec.network}": pool ${spec.subnetText} is exhausted`,
    `${spec.size} allocatable addresses, all assigned or cooling down`,
  );
}
