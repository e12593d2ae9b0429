/**
 * The attachment state machine on a real SQLite file, as its unit tests drive it: the real stores, IPAM,
 * inventory, tenancy and sysfs reader (at the config's `sysfsRoot`), a clock the test moves, a real
 * commit-journal directory; and builders of what a shim sends.
 */
import { join } from 'node:path';
import { Ip, Iproute2 } from '@ferry/net';
import type { AllocateRequest, Allocation, DelegatedNicPlan } from '@ferry/shared-types/api/allocations';
import type { ReservationRequest } from '@ferry/shared-types/api/devices';
import type { CommitRequest } from '@ferry/shared-types/api/endpoints';
import { CniError } from '@ferry/shared-types/errors';
import pino from 'pino';
import type { TestContext } from 'vitest';
import { Attachments } from '../attachments/attachments';
import { JournalDir } from '../attachments/commit-journal';
import { Tenancy } from '../attachments/tenancy';
import { servedGroupsOf } from '../device-plugin/served';
import { Inventory } from '../devices/inventory';
import { PciAddresses } from '../devices/pci';
import { Sysfs } from '../devices/sysfs';
import { Ipam } from '../ipam/ipam';
import { AttachmentStore } from '../store/attachments';
import { type Db, openDatabase } from '../store/db';
import { DeviceStore } from '../store/devices';
import { PoolStore } from '../store/pools';
import { tempDir, testConfig } from './harness';

export const ATTACHMENTS_CLOCK = { T0: Date.UTC(2026, 10, 30, 12, 0, 0) };
const { T0 } = ATTACHMENTS_CLOCK;

export interface World {
  attachments: Attachments;
  ipam: Ipam;
  inventory: Inventory;
  devices: DeviceStore;
  db: Db;
  journal: JournalDir;
  clock: { now: number };
  pci: PciAddresses;
  /** How many times a release said it freed delegated devices. */
  devicesReleased: number;
  /** The pods whose attachments were committed or released, in order. */
  podsChanged: string[];
  settled: { promoted: number; discarded: number }[];
}

/** `prepare` gets the database's path before ferryd's code opens it (to seed one an older ferryd wrote). */
export function useAttachments(
  t: TestContext,
  overrides: Record<string, unknown> = {},
  prepare?: (databasePath: string) => void,
): World {
  const dir = tempDir(t);
  const config = testConfig(dir, { cooldownSec: 30, ...overrides });
  prepare?.(config.database);
  const store = openDatabase(config.database);
  t.onTestFinished(() => store.close());
  const { db } = store;
  const clock = { now: T0 };
  const now = () => clock.now;
  const devices = new DeviceStore(db);
  const journal = new JournalDir(join(dir, 'commit-journal'));
  const log = pino({ level: 'silent' });
  const ip = new Ip(new Iproute2(() => Promise.reject(new Error('no iproute2 in these tests'))));
  const pci = new PciAddresses(new Sysfs(config.sysfsRoot));
  const served = servedGroupsOf(config);
  const ipam = new Ipam(new PoolStore(db), config);
  const w: World = {
    ipam,
    db,
    devices,
    journal,
    clock,
    pci,
    devicesReleased: 0,
    podsChanged: [],
    settled: [],
    inventory: new Inventory({
      db,
      devices,
      ip,
      config: [],
      log,
      now,
      goneGraceSec: config.reconcile.deviceGoneGraceSec,
      pci,
      served,
    }),
    attachments: new Attachments({
      db,
      attachmentStore: new AttachmentStore(db),
      devices,
      ipam,
      tenancy: new Tenancy(
        config.tenancy,
        config.delegatedDevices.map((d) => d.group),
      ),
      pci,
      served,
      now,
      journal,
      log,
      onJournalSettled: (outcome) => {
        w.settled.push(outcome);
      },
    }),
  };
  w.attachments.onDevicesReleased(() => {
    w.devicesReleased++;
  });
  w.attachments.onPodChanged((pod) => {
    w.podsChanged.push(`${pod.namespace}/${pod.name}`);
  });
  return w;
}

export const request = (containerId: string, extra: Partial<AllocateRequest> = {}): AllocateRequest => ({
  network: 'ferry',
  containerId,
  ifName: 'eth0',
  netns: '/var/run/netns/ferry-t-unit',
  ...extra,
});

/** What the shim commits after building `a` (or the interfaces named). */
export const commitOf = (a: Allocation, ifNames = a.nics.map((n) => n.ifName)): CommitRequest => ({
  network: a.network,
  ifName: a.ifName,
  generation: a.generation,
  nics: ifNames.map((ifName, k) => ({ ifName, mac: `02:00:00:00:aa:0${k + 1}`, containerIfIndex: k + 2 })),
});

/** A delegatable device on the node (as a scan would have recorded it). */
export function addDevice(w: World, mac: string, group: string, hostIfName: string, present = true): void {
  w.devices.upsert(mac, mac, group, hostIfName);
  w.devices.setPresence(mac, present, present ? { atMs: w.clock.now, mac } : undefined);
}

export function reserve(
  w: World,
  mac: string,
  r: Partial<ReservationRequest> & { namespace: string; pod: string },
): void {
  w.inventory.reserve(mac, { addresses: [], routes: [], ...r });
}

export const stateOf = (w: World, mac: string) => w.inventory.list().find((d) => d.mac === mac)?.state;

/** The thrown CniError's code and message, for one assertion. */
export function failure(fn: () => unknown): { code: number; msg: string } {
  try {
    fn();
  } catch (err) {
    if (err instanceof CniError) return { code: err.code, msg: err.message };
    throw err;
  }
  throw new Error('expected a CniError, nothing was thrown');
}

export const delegated = (a: Allocation) => a.nics.filter((n): n is DelegatedNicPlan => n.nicType === 'DelegatedNIC');
