/**
 * An allocation that finds the node's blocks full waits for the claim it causes (the block manager's
 * waitForRoom), for at most the range's `blocks.waitMs`, then tries again: the ADD costs one more local
 * transaction, never an API round trip of its own. Still no room: code 11 (try again later), since a
 * claim may yet succeed; the range has no block left to claim: code 100.
 */
import { CniError, Code } from '@ferry/shared-types/errors';
import { NoRoomInBlocks } from './allocator';
import type { RoomOutcome } from './blocks/manager';

export interface RoomWaiter {
  waitForRoom(network: string, family: 4 | 6, timeoutMs: number): Promise<RoomOutcome>;
}

export async function withRoom<T>(
  waiter: RoomWaiter | undefined,
  allocate: () => Promise<T>,
  now = Date.now,
): Promise<T> {
  let deadline: number | undefined;
  for (;;) {
    try {
      return await allocate();
    } catch (err) {
      if (!(err instanceof NoRoomInBlocks) || !waiter) throw err;
      deadline ??= now() + err.waitMs;
      const left = deadline - now();
      if (left <= 0) throw err;
      const outcome = await waiter.waitForRoom(err.network, err.family, left);
      if (outcome === 'timeout') throw err;
      if (outcome === 'exhausted') {
        // The range has nothing left to claim, but this node's own claim of its last block may have
        // landed a moment before the verdict: one more look at the node's blocks before code 100.
        try {
          return await allocate();
        } catch (again) {
          if (!(again instanceof NoRoomInBlocks)) throw again;
        }
        throw new CniError(
          Code.PoolExhausted,
          `allocate IPv${err.family} address on network "${err.network}": range ${err.range} is exhausted`,
          "every block of the range is held by a node, and this node's blocks are full",
        );
      }
    }
  }
}
