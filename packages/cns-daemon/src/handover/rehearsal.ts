/**
 * A taking-over ferryd's start-up, once, on a throwaway database before it asks its predecessor to hand
 * over. Its predecessor holds requests from the hand-over until this ferryd serves the socket, so the
 * window is this ferryd's start-up after the database opens; a first run of that code costs several
 * times a second one (module initialisation, the JIT, fastify compiling every route's schemas: services
 * plus app 155 ms first, 23 ms after, in this repository's unit runner), and none of it needs the real
 * database. Nothing here touches the node: no reconcile pass (it would read the node and adopt it into
 * the throwaway database), no cluster, no listener.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { buildApp } from '../app';
import type { FerrydConfig } from '../config';
import { buildServices } from '../services';
import { openDatabase } from '../store/db';
import { SCHEMA_VERSION } from '../store/migrations/index';
import { HandingOver } from './handing-over';

export async function rehearseStartup(config: FerrydConfig, nativeBinding?: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'ferryd-rehearsal-'));
  try {
    const { cluster: _cluster, tcp: _tcp, readyFile: _readyFile, ...rest } = config;
    const rehearsal: FerrydConfig = {
      ...rest,
      socket: join(dir, 'ferryd.sock'),
      database: join(dir, 'ferry.db'),
      deleteQueue: join(dir, 'delete-queue'),
      commitJournal: join(dir, 'commit-journal'),
    };
    const store = openDatabase(rehearsal.database, nativeBinding ? { nativeBinding } : {});
    try {
      const log = pino({ level: 'silent' });
      const { deps } = buildServices(rehearsal, store.db, { log, now: Date.now, defaultMetrics: false });
      const handingOver = new HandingOver({
        socket: rehearsal.socket,
        schemaVersion: SCHEMA_VERSION,
        log,
        graceMs: 0,
        release: async () => {},
        onAbandoned: () => {},
      });
      const app = await buildApp(deps, { surface: 'unix', handingOver });
      await app.ready();
      await app.close();
    } finally {
      store.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
