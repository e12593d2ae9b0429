/**
 * Unit-test harness: a real SQLite file in a fresh temp dir, the real services and app, a clock the
 * test moves. Everything is closed through onTestFinished the moment it exists.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import type { TestContext } from 'vitest';
import { type AppOptions, buildApp, type FerrydApp } from '../app';
import { type FerrydConfig, validateConfig } from '../config';
import { buildServices, type ServiceOptions, type Services } from '../services';
import { type Db, openDatabase } from '../store/db';
import { DeviceStore } from '../store/devices';

export interface Harness {
  app: FerrydApp;
  services: Services;
  config: FerrydConfig;
  db: Db;
  dir: string;
  clock: { now: number };
}

export function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-t-unit-'));
  t.onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export function testConfig(dir: string, overrides: Record<string, unknown> = {}): FerrydConfig {
  return validateConfig(
    {
      socket: join(dir, 'ferryd.sock'),
      database: join(dir, 'ferry.db'),
      deleteQueue: join(dir, 'queue'),
      logLevel: 'silent',
      networks: [{ name: 'ferry', ipv4: { subnet: '10.244.1.0/24' }, ipv6: { subnet: 'fd00:10:244:1::/64' } }],
      ...overrides,
    },
    'test',
  );
}

export async function useApp(
  t: TestContext,
  overrides: Record<string, unknown> = {},
  opts: {
    ready?: boolean;
    surface?: AppOptions['surface'];
    tokens?: { read: string; admin?: string };
    /** Modules daemon.ts loads only when configured (the Kubernetes ones). */
    services?: Pick<ServiceOptions, 'kubeSource' | 'podServices'>;
  } = {},
): Promise<Harness> {
  const dir = tempDir(t);
  const config = testConfig(dir, overrides);
  const store = openDatabase(config.database);
  t.onTestFinished(() => store.close());
  const clock = { now: Date.UTC(2026, 10, 30, 12, 0, 0) };
  const services = buildServices(config, store.db, {
    log: pino({ level: 'silent' }),
    now: () => clock.now,
    defaultMetrics: false,
    ...opts.services,
  });
  const app = await buildApp(services.deps, {
    surface: opts.surface ?? 'unix',
    checkResponses: true,
    ...(opts.tokens ? { tokens: opts.tokens } : {}),
  });
  t.onTestFinished(() => app.close());
  if (opts.ready !== false) services.deps.lifecycle.markReady();
  return { app, services, config, db: store.db, dir, clock };
}

/** A delegatable device on the node, as ferryd's scan would have recorded it (the tests read no host links). */
export function addDevice(h: Harness, mac: string, group: string, hostIfName: string): void {
  const devices = new DeviceStore(h.db);
  devices.upsert(mac, mac, group, hostIfName);
  devices.setPresence(mac, true, { atMs: h.clock.now, mac });
}
