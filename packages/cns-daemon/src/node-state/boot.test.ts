import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { expect, type TestContext, test } from 'vitest';
import { Attachments } from '../attachments/attachments';
import { Ipam } from '../ipam/ipam';
import { AttachmentStore } from '../store/attachments';
import { openDatabase } from '../store/db';
import { DeviceStore } from '../store/devices';
import { NodeStateStore } from '../store/node-state';
import { PoolStore } from '../store/pools';
import { tempDir, testConfig } from '../testing/harness';
import { BootCheck } from './boot';

function useStore(t: TestContext) {
  const dir = tempDir(t);
  const config = testConfig(dir);
  const bootIdPath = join(dir, 'boot_id');
  const clock = { now: Date.UTC(2026, 11, 1) };
  const now = () => clock.now;
  const store = openDatabase(config.database);
  t.onTestFinished(() => store.close());
  const { db } = store;
  const attachmentStore = new AttachmentStore(db);
  const pools = new PoolStore(db);
  const ipam = new Ipam(pools, config);
  const attachments = new Attachments({ db, attachmentStore, devices: new DeviceStore(db), ipam, now });
  const check = () =>
    new BootCheck({
      bootIdPath,
      nodeState: new NodeStateStore(db),
      attachmentStore,
      pools,
      attachments,
      log: pino({ level: 'silent' }),
    }).releaseAfterReboot();
  const allocate = (containerId: string, netns: string) =>
    attachments.allocate({ network: 'ferry', containerId, ifName: 'eth0', netns });
  return { bootIdPath, check, allocate, attachments, pools, clock };
}

test('a new boot id releases every endpoint whose netns is gone, and every cooling address, at once', (t) => {
  const s = useStore(t);
  writeFileSync(s.bootIdPath, 'boot-1\n');
  expect(s.check()).toBe(0);
  s.allocate('gone', '/var/run/netns/gone');
  s.allocate('alive', '/proc/self/ns/net');
  s.allocate('cooling', '/proc/self/ns/net');
  s.attachments.release('cooling', 'ferry', 'eth0');
  // Same boot: nothing (the grace period and the cooldown are the stale sweep's).
  expect(s.check()).toBe(0);
  expect(s.pools.list({}, s.clock.now)).toHaveLength(6);

  writeFileSync(s.bootIdPath, 'boot-2\n');
  expect(s.check()).toBe(1);
  expect(s.pools.list({}, s.clock.now).map((a) => [a.container_id, a.state])).toEqual([
    ['alive', 'Assigned'],
    ['alive', 'Assigned'],
  ]);
});

test('no boot id (unreadable, empty) decides nothing', (t) => {
  const s = useStore(t);
  s.allocate('gone', '/var/run/netns/gone');
  expect(s.check()).toBe(0);
  writeFileSync(s.bootIdPath, '\n');
  expect(s.check()).toBe(0);
  expect(s.pools.list({ state: 'Assigned' }, s.clock.now)).toHaveLength(2);
});
