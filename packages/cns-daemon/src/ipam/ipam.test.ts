import { CniError, Code } from '@ferry/shared-types/errors';
import { expect, test } from 'vitest';
import { type FerrydConfig, validateConfig } from '../config';
import { AttachmentStore } from '../store/attachments';
import { openDatabase } from '../store/db';
import { PoolStore } from '../store/pools';
import { tempDir, testConfig } from '../testing/harness';
import { NoRoomInBlocks } from './allocator';
import { parseCidr } from './cidr';
import { Ipam } from './ipam';

const KUBE = { cluster: { nodeName: 'n1', kubernetes: { kubeconfig: '/etc/kubeconfig' } } };

/** IPAM on a real database, with interface rows 1..20 for it to assign to. */
function useIpam(t: Parameters<typeof tempDir>[0], overrides: Record<string, unknown>) {
  const dir = tempDir(t);
  const config: FerrydConfig = testConfig(dir, overrides);
  const store = openDatabase(config.database);
  t.onTestFinished(() => store.close());
  const pools = new PoolStore(store.db);
  const attachments = new AttachmentStore(store.db);
  for (let i = 1; i <= 20; i++) {
    const a = attachments.insertAttachment({
      network: 'ferry',
      containerId: `c${i}`,
      ifName: 'eth0',
      netns: '/var/run/netns/x',
      nowMs: 0,
    });
    attachments.insertInterface({
      attachmentId: a.generation,
      position: 0,
      containerId: `c${i}`,
      ifName: 'eth0',
      endpointId: `c${i}`,
      nicType: 'InfraNIC',
      routesJson: '[]',
    });
  }
  return { pools, open: (c: FerrydConfig = config) => new Ipam(pools, c) };
}

const addressOf = (pools: PoolStore, interfaceId: number) => pools.addressesOf(interfaceId).map((r) => r.address);
const configOf = (t: Parameters<typeof tempDir>[0], overrides: Record<string, unknown>) =>
  validateConfig({ ...testConfig(tempDir(t)), ...overrides }, 'test');

test('a range hands out addresses only from the blocks held, and a full set of blocks is code 11, not 100', (t) => {
  const { pools, open } = useIpam(t, {
    networks: [{ name: 'ferry', ipv4: { subnet: '10.9.0.0/16', blocks: { prefixLength: 30 } } }],
    ...KUBE,
  });
  const ipam = open();
  const err = (() => {
    try {
      ipam.assign('ferry', 1, 0);
    } catch (e) {
      return e;
    }
  })();
  expect(err).toBeInstanceOf(NoRoomInBlocks);
  expect(err).toMatchObject({ code: Code.TryAgainLater, family: 4, network: 'ferry' });

  ipam.setBlocks('ferry', 4, [parseCidr('10.9.7.4/30')]);
  ipam.assign('ferry', 1, 0);
  ipam.assign('ferry', 2, 0);
  ipam.assign('ferry', 3, 0);
  // The block's first address is never a pod's (a VXLAN end's), the range's broadcast neither.
  expect([1, 2, 3].flatMap((i) => addressOf(pools, i))).toEqual(['10.9.7.5', '10.9.7.6', '10.9.7.7']);
  expect(() => ipam.assign('ferry', 4, 0)).toThrow(NoRoomInBlocks);
  ipam.setBlocks('ferry', 4, [parseCidr('10.9.7.4/30'), parseCidr('10.9.200.0/30')]);
  ipam.assign('ferry', 4, 0);
  expect(addressOf(pools, 4)).toEqual(['10.9.200.1']);
});

test('a fixed subnet still says 100 when it is exhausted', (t) => {
  const { open } = useIpam(t, { networks: [{ name: 'ferry', ipv4: { subnet: '10.9.0.0/30' } }] });
  const ipam = open();
  ipam.assign('ferry', 1, 0);
  ipam.assign('ferry', 2, 0);
  let err: unknown;
  try {
    ipam.assign('ferry', 3, 0);
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(CniError);
  expect(err).not.toBeInstanceOf(NoRoomInBlocks);
  expect(err).toMatchObject({ code: Code.PoolExhausted });
});

test('a /24 grown into a range containing it keeps every address (re-based offsets); another change is refused', (t) => {
  const w = useIpam(t, {
    networks: [{ name: 'ferry', ipv4: { subnet: '10.244.3.0/24' }, ipv6: { subnet: 'fd00:10:244:3::/64' } }],
  });
  const before = w.open();
  for (const i of [1, 2, 3]) before.assign('ferry', i, 0);
  before.release(3, 0);
  const held = [1, 2, 3].map((i) => addressOf(w.pools, i));
  expect(held[0]).toEqual(['10.244.3.1', 'fd00:10:244:3::1']);

  const grown = configOf(t, {
    networks: [
      {
        name: 'ferry',
        ipv4: { subnet: '10.244.0.0/16', blocks: {} },
        ipv6: { subnet: 'fd00:10:244::/56', blocks: {} },
      },
    ],
    ...KUBE,
  });
  const after = w.open(grown);
  expect(w.pools.getPool('ferry', 4)?.subnet).toBe('10.244.0.0/16');
  expect([1, 2].map((i) => addressOf(w.pools, i))).toEqual(held.slice(0, 2));
  // The rows' offsets are counted from the range's base now: the allocator sees them where they are.
  after.setBlocks('ferry', 4, [parseCidr('10.244.3.0/26')]);
  after.setBlocks('ferry', 6, [parseCidr('fd00:10:244:3::/122')]);
  after.assign('ferry', 9, 0);
  // Round-robin from the cursor, re-based too: past .2 and the cooling .3.
  expect(addressOf(w.pools, 9)).toEqual(['10.244.3.4', 'fd00:10:244:3::4']);
  expect(w.pools.rowAt(w.pools.getPool('ferry', 4)?.id ?? 0, '00000301')?.address).toBe('10.244.3.1');

  const moved = configOf(t, { networks: [{ name: 'ferry', ipv4: { subnet: '10.245.0.0/24' } }] });
  expect(() => w.open(moved)).toThrow(
    /subnet changed from 10\.244\.0\.0\/16 to 10\.245\.0\.0\/24 while 4 addresses are held/,
  );
});
