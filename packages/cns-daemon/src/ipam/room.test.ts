import { expect, test } from 'vitest';
import { NoRoomInBlocks } from './allocator';
import { withRoom } from './room';

const full = () =>
  new NoRoomInBlocks({
    network: 'pods',
    family: 4,
    subnetText: '10.9.0.0/24',
    size: 15,
    blocks: { waitMs: 1000 },
    // Only the fields the error reads: a whole PoolSpec comes from a validated config.
  } as unknown as ConstructorParameters<typeof NoRoomInBlocks>[0]);

test("the range exhausted: the node's blocks are looked at once more, then code 100", async () => {
  let calls = 0;
  const exhausted = { waitForRoom: async () => 'exhausted' as const };
  await expect(
    withRoom(exhausted, async () => {
      calls++;
      throw full();
    }),
  ).rejects.toMatchObject({ code: 100, message: expect.stringContaining('range 10.9.0.0/24 is exhausted') });
  expect(calls).toBe(2);
  // The node's own claim landed meanwhile: the ADD gets its address, not 100.
  let tries = 0;
  const address = await withRoom(exhausted, async () => {
    if (tries++ === 0) throw full();
    return '10.9.0.1';
  });
  expect(address).toBe('10.9.0.1');
});
