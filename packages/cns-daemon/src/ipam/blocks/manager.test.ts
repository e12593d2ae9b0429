import { join } from 'node:path';
import { Code } from '@ferry/shared-types/errors';
import pino from 'pino';
import { expect, test } from 'vitest';
import { validateConfig } from '../../config';
import { AttachmentStore } from '../../store/attachments';
import { BlockStore } from '../../store/blocks';
import { openDatabase } from '../../store/db';
import { PoolStore } from '../../store/pools';
import { tempDir } from '../../testing/harness';
import { NoRoomInBlocks } from '../allocator';
import { Ipam } from '../ipam';
import { withRoom } from '../room';
import { BlockManager } from './manager';
import { FakeBlockCluster, fakeNameOf } from './testing';

type Ctx = Parameters<typeof tempDir>[0];

interface TestNode {
  name: string;
  manager: BlockManager;
  ipam: Ipam;
  pools: PoolStore;
  blocks: BlockStore;
  clock: { now: number };
  /** Assigns an address to a new interface; the address. */
  add(): string;
  /** Releases (into cooldown) the interface that got `address`. */
  del(address: string): void;
  /** The blocks the store holds, as CIDR text. */
  held(): string[];
  /** A new InfraNIC interface row (for an address set by hand, as adoption sets one). */
  newInterface(): number;
  /** Stops the manager and closes the database (a ferryd stopping). */
  close(): Promise<void>;
}

/** A node with its own database and block manager, against `cluster`; `dir` reuses a database (a restart). */
function useNode(
  t: Ctx,
  cluster: FakeBlockCluster,
  name: string,
  blocks: Record<string, unknown> = {},
  dir = tempDir(t),
  foreignPodCIDRs: readonly string[] = [],
): TestNode & { dir: string } {
  const config = validateConfig(
    {
      socket: join(dir, 's'),
      database: join(dir, 'ferry.db'),
      logLevel: 'silent',
      cooldownSec: 0,
      networks: [{ name: 'pods', ipv4: { subnet: '10.9.0.0/24', blocks: { prefixLength: 28, ...blocks } } }],
      cluster: { nodeName: name, kubernetes: { kubeconfig: '/etc/kubeconfig' } },
    },
    'test',
  );
  const store = openDatabase(config.database);
  let isOpen = true;
  const closeStore = () => {
    if (isOpen) store.close();
    isOpen = false;
  };
  t.onTestFinished(closeStore);
  const { db } = store;
  const pools = new PoolStore(db);
  const blockStore = new BlockStore(db);
  const attachments = new AttachmentStore(db);
  const ipam = new Ipam(pools, config);
  const clock = { now: 1_000_000 };
  const manager = new BlockManager({
    nodeName: name,
    db,
    ipam,
    pools,
    blocks: blockStore,
    api: cluster.api(),
    view: cluster.view(),
    nameOf: fakeNameOf,
    foreignPodCIDRs: () => foreignPodCIDRs,
    log: pino({ level: 'silent' }),
    now: () => clock.now,
    tickMs: 3_600_000,
  });
  t.onTestFinished(() => manager.stop());
  const byAddress = new Map<string, number>();
  let seq = 0;
  const newInterface = () => {
    const containerId = `c${++seq}`;
    const a = attachments.insertAttachment({ network: 'pods', containerId, ifName: 'eth0', netns: '/x', nowMs: 0 });
    return attachments.insertInterface({
      attachmentId: a.generation,
      position: 0,
      containerId,
      ifName: 'eth0',
      endpointId: containerId,
      nicType: 'InfraNIC',
      routesJson: '[]',
    });
  };
  return {
    newInterface,
    async close() {
      await manager.stop();
      closeStore();
    },
    name,
    dir,
    manager,
    ipam,
    pools,
    blocks: blockStore,
    clock,
    add() {
      return db.transaction(() => {
        const id = newInterface();
        ipam.assign('pods', id, clock.now);
        const address = pools.addressesOf(id)[0]?.address ?? '';
        byAddress.set(address, id);
        return address;
      })();
    },
    del(address) {
      ipam.release(byAddress.get(address) ?? -1, clock.now);
      ipam.sweep(clock.now);
    },
    held: () =>
      blockStore
        .blocksOf(pools.getPool('pods', 4)?.id ?? -1)
        .filter((b) => b.state === 'held')
        .map((b) => b.cidr),
  };
}

test('a node claims a block ahead of demand, then serves ADDs from it without the API server', async (t) => {
  const cluster = new FakeBlockCluster();
  const n = useNode(t, cluster, 'node-a', { minFree: 4, maxFree: 40 });
  expect(() => n.add()).toThrow(NoRoomInBlocks);
  await n.manager.runSoon();
  expect(n.held()).toHaveLength(1);
  const [block] = n.held();
  expect(cluster.objects.get(fakeNameOf('pods', 4, block ?? ''))?.node).toBe('node-a');
  cluster.isAway = true;
  const addresses = Array.from({ length: 10 }, () => n.add());
  expect(new Set(addresses).size).toBe(10);
  // /28 blocks: 15 addresses each (the first is never a pod's); 5 free is above minFree: no API call.
  await n.manager.runSoon();
  const status = n.manager.status()[0];
  expect(status).toMatchObject({ free: (status?.blocks[0]?.allocatable ?? 0) - 10, lastError: null });
  expect(status?.free).toBeGreaterThanOrEqual(4);
  // Below minFree with the API server away: the claim fails, is retried later, nothing is lost.
  n.add();
  n.add();
  await n.manager.runSoon();
  expect(n.manager.status()[0]?.lastError).toMatch(/ECONNREFUSED/);
  expect(n.held()).toEqual([block]);
  cluster.isAway = false;
  n.clock.now += 60_000;
  await n.manager.runSoon();
  expect(n.held()).toHaveLength(2);
});

test('nodes racing for the last free block: one gets it, the other is told so and finds the range exhausted', async (t) => {
  const cluster = new FakeBlockCluster();
  // 16 blocks of /28 in the /24: 15 held by someone else.
  for (let i = 1; i < 16; i++) cluster.put({ network: 'pods', family: 4, cidr: `10.9.0.${i * 16}/28`, node: 'node-z' });
  const a = useNode(t, cluster, 'node-a');
  const b = useNode(t, cluster, 'node-b');
  await Promise.all([a.manager.runSoon(), b.manager.runSoon()]);
  const holders = [a.held(), b.held()];
  expect(holders.flat()).toEqual(['10.9.0.0/28']);
  const loser = holders[0]?.length ? b : a;
  expect(loser.manager.status()[0]).toMatchObject({ isRangeExhausted: true });
  // Its ADD gets 100 (the range is exhausted), not 11.
  const err = await withRoom(loser.manager, async () => loser.add()).catch((e: unknown) => e);
  expect(err).toMatchObject({
    code: Code.PoolExhausted,
    message: expect.stringContaining('range 10.9.0.0/24 is exhausted'),
  });
});

test('the last block found held by another node at its create (409) makes the range exhausted before the watch shows it', async (t) => {
  const cluster = new FakeBlockCluster();
  for (let i = 1; i < 16; i++) cluster.put({ network: 'pods', family: 4, cidr: `10.9.0.${i * 16}/28`, node: 'node-z' });
  // node-y took the last one a moment ago; node-a's informer has not heard of it.
  cluster.unseen.add(cluster.put({ network: 'pods', family: 4, cidr: '10.9.0.0/28', node: 'node-y' }).name);
  const a = useNode(t, cluster, 'node-a');
  await a.manager.runSoon();
  expect(a.held()).toEqual([]);
  expect(a.manager.status()[0]).toMatchObject({ isRangeExhausted: true });
  const err = await withRoom(a.manager, async () => a.add()).catch((e: unknown) => e);
  expect(err).toMatchObject({ code: Code.PoolExhausted });
});

test('the last block, claimed for an ADD whose allocation has not landed yet, is kept for it', async (t) => {
  const cluster = new FakeBlockCluster();
  for (let i = 1; i < 16; i++) cluster.put({ network: 'pods', family: 4, cidr: `10.9.0.${i * 16}/28`, node: 'node-z' });
  const n = useNode(t, cluster, 'node-a', { minFree: 0 });
  await n.manager.runSoon();
  expect(n.held()).toEqual([]);
  // An ADD's wait causes the claim; its allocation has not landed when the next pass runs (the claim
  // outlasted waitMs on a loaded node and the ADD heard 11, or the pass came between 'room' and its commit).
  await n.manager.waitForRoom('pods', 4, 0);
  await n.manager.runSoon();
  expect(n.held()).toEqual(['10.9.0.0/28']);
  // The range is exhausted now and the block is empty: it is still not given back before the retry.
  n.clock.now += 5_000;
  await n.manager.runSoon();
  expect(n.manager.status()[0]).toMatchObject({ isRangeExhausted: true });
  expect(n.held()).toEqual(['10.9.0.0/28']);
  expect(n.add()).toMatch(/^10\.9\.0\.\d+$/);
});

test('an ADD that finds no room waits for the claim it causes', async (t) => {
  const cluster = new FakeBlockCluster();
  const n = useNode(t, cluster, 'node-a', { minFree: 0, maxFree: 20 });
  await n.manager.runSoon();
  // minFree 0: nothing claimed ahead; the ADD's wait is the demand.
  expect(n.held()).toEqual([]);
  const address = await withRoom(n.manager, async () => n.add());
  expect(address).toMatch(/^10\.9\.0\.\d+$/);
  expect(n.held()).toHaveLength(1);
});

test('an empty block goes back after releaseAfterSec; with the API server away the release waits, across a restart', async (t) => {
  const cluster = new FakeBlockCluster();
  const n = useNode(t, cluster, 'node-a', { minFree: 8, maxFree: 24, releaseAfterSec: 60 });
  await n.manager.runSoon();
  const used = Array.from({ length: 10 }, () => n.add());
  await n.manager.runSoon();
  used.push(...Array.from({ length: 10 }, () => n.add()));
  await n.manager.runSoon();
  expect(n.held()).toHaveLength(2);
  for (const a of used) n.del(a);
  await n.manager.runSoon();
  n.clock.now += 59_000;
  await n.manager.runSoon();
  expect(n.held()).toHaveLength(2);
  cluster.isAway = true;
  n.clock.now += 2_000;
  await n.manager.runSoon();
  // Marked releasing (nothing handed out of it), still an object in the API server.
  expect(n.held()).toHaveLength(1);
  expect(cluster.objects.size).toBe(2);
  await n.close();

  const again = useNode(t, cluster, 'node-a', { minFree: 8, maxFree: 24, releaseAfterSec: 60 }, n.dir);
  expect(again.held()).toHaveLength(1);
  cluster.isAway = false;
  await again.manager.runSoon();
  expect(cluster.objects.size).toBe(1);
  expect([...cluster.objects.values()].map((b) => b.cidr)).toEqual(again.held());
});

test('a database lost: the blocks are re-learned from the API server; an address outside them claims its block again', async (t) => {
  const cluster = new FakeBlockCluster();
  const n = useNode(t, cluster, 'node-a', { minFree: 1, maxFree: 20 });
  await n.manager.runSoon();
  const [block] = n.held();
  await n.close();

  // minFree 0: only what is in use claims blocks.
  const fresh = useNode(t, cluster, 'node-a', { minFree: 0, maxFree: 20 });
  expect(fresh.held()).toEqual([]);
  await fresh.manager.runSoon();
  expect(fresh.held()).toEqual([block]);
  expect(cluster.creates).toBe(1);

  // An address in use (the kernel showed it: node-state adoption) in a block the API server has as no one's.
  const poolId = fresh.pools.getPool('pods', 4)?.id ?? -1;
  cluster.remove(fakeNameOf('pods', 4, block ?? ''));
  await fresh.manager.runSoon();
  expect(fresh.held()).toEqual([]);
  fresh.pools.claim(poolId, '000000c8', '10.9.0.200', fresh.newInterface(), fresh.clock.now);
  await fresh.manager.runSoon();
  expect(fresh.held()).toEqual(['10.9.0.192/28']);

  // Another node holds the block of an address this one uses: loud, and nothing of it is handed out.
  cluster.put({ network: 'pods', family: 4, cidr: '10.9.0.96/28', node: 'node-b' });
  const holder = fresh.newInterface();
  fresh.pools.claim(poolId, '0000006a', '10.9.0.106', holder, fresh.clock.now);
  await fresh.manager.runSoon();
  expect(fresh.held()).toEqual(['10.9.0.192/28']);
  expect(fresh.manager.violations()).toEqual([
    {
      kind: 'block-conflict',
      subject: '10.9.0.96/28',
      msg: expect.stringMatching(
        /addresses in use on this node lie in block 10\.9\.0\.96\/28, which node node-b holds/,
      ),
    },
  ]);
  // The pod using it gone (its address released, cooled down): the conflict is over.
  fresh.ipam.release(holder, fresh.clock.now);
  fresh.ipam.sweep(fresh.clock.now);
  await fresh.manager.runSoon();
  expect(fresh.manager.violations()).toEqual([]);
});

test('a block edited by hand that names this node but is not valid is never handed out of', async (t) => {
  const cluster = new FakeBlockCluster();
  cluster.put({ network: 'pods', family: 4, cidr: '10.9.0.0/26', node: 'node-a' });
  cluster.put({ network: 'pods', family: 4, cidr: '10.9.1.0/28', node: 'node-a' });
  const n = useNode(t, cluster, 'node-a', { minFree: 1, maxFree: 20 });
  await n.manager.runSoon();
  expect(n.held()).toHaveLength(1);
  expect(n.held()[0]).toMatch(/^10\.9\.0\.(64|128|192|208|224|240|80|96|112|144|160|176)\/28$/);
  expect(
    n.manager
      .violations()
      .map((v) => v.msg)
      .join('\n'),
  ).toMatch(
    /IPBlock pods\.v4\.10-9-0-0-26 \(10\.9\.0\.0\/26\) names this node but is not valid: 10\.9\.0\.0\/26 is not a \/28 block/,
  );
  expect(
    n.manager
      .violations()
      .map((v) => v.msg)
      .join('\n'),
  ).toMatch(/10\.9\.1\.0\/28 is not inside the range 10\.9\.0\.0\/24/);
});

test('while its Node has spec.podCIDRs (a migration), a node claims its new blocks inside them first', async (t) => {
  const cluster = new FakeBlockCluster();
  cluster.podCIDRs = ['10.9.0.64/26'];
  const n = useNode(t, cluster, 'node-a', { minFree: 40, maxFree: 60 });
  await n.manager.runSoon();
  // 40 free wanted, 15 a block: 3 blocks, and the /26 has room for 4.
  expect(n.held().sort()).toHaveLength(3);
  for (const b of n.held()) expect(['10.9.0.64/28', '10.9.0.80/28', '10.9.0.96/28', '10.9.0.112/28']).toContain(b);
});

test('a block inside another Node’s spec.podCIDRs is never claimed (theirs while the cluster moves to blocks)', async (t) => {
  const cluster = new FakeBlockCluster();
  const n = useNode(t, cluster, 'node-a', { minFree: 40, maxFree: 60 }, tempDir(t), ['10.9.0.0/25', '10.9.0.192/26']);
  await n.manager.runSoon();
  // Only 10.9.0.128/26 is left: its four /28 blocks at most, none inside the other nodes' CIDRs.
  expect(n.held().length).toBeGreaterThan(0);
  for (const b of n.held()) expect(['10.9.0.128/28', '10.9.0.144/28', '10.9.0.160/28', '10.9.0.176/28']).toContain(b);
});
