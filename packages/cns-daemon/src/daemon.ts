/**
 * Runs ferryd: open the store (taking it over from the ferryd serving the node, if one does), build the
 * services, reconcile, put the unix socket at its path (and the optional TCP and scrape listeners), then
 * report ready. main.ts adds config, signals and exit codes.
 */
import { readFileSync, rmSync } from 'node:fs';
import type { Logger } from 'pino';
import { type AppDeps, type AppOptions, buildApp, type FerrydApp } from './app';
import type { FerrydConfig } from './config';
import { StartupError } from './errors';
import { HandingOver } from './handover/handing-over';
import { readyFileAt } from './handover/ready-file';
import { openTakingOver } from './handover/taking-over';
import type { Lifecycle } from './lifecycle';
import { recordRecovery } from './node-state/build';
import { buildServices } from './services';
import { listenAtPath } from './socket';
import type { OpenedDb } from './store/db';
import { SCHEMA_VERSION } from './store/migrations/index';
import { Teardown } from './teardown';

/** How long start-up waits for shims that are writing to the delete queue. */
const QUEUE_LOCK_WAIT_MS = 10_000;
/** Corrupt databases kept next to the database for the post-mortem (the oldest go first). */
const KEEP_CORRUPT = 3;
/** How long a new ferryd asks a lock holder that does not answer yet (it is starting) to hand over. */
const TAKE_OVER_WAIT_MS = 60_000;

export interface DaemonOptions {
  log: Logger;
  nativeBinding?: string;
  now?: () => number;
  /** Collect process metrics (off where several daemons share a process). */
  defaultMetrics?: boolean;
  /** The successor this ferryd handed over to never took the socket: it must end (main exits 1). */
  onAbandoned?: (reason: string) => void;
}

export interface Daemon {
  lifecycle: Lifecycle;
  unixApp: FerrydApp;
  tcpApp?: FerrydApp;
  /** The scrape listener (`metrics` in the config). */
  metricsApp?: FerrydApp;
  /** Refuses ADD from now on, finishes in-flight requests, closes listeners and the database. */
  stop(): Promise<void>;
}

export async function startDaemon(config: FerrydConfig, opts: DaemonOptions): Promise<Daemon> {
  const { log } = opts;
  const took = stepTimer();
  const store = await openStore(config, opts);
  took.step('open');
  const teardown = new Teardown(log);
  teardown.beforeStore(() => store.close());
  const readyFile = readyFileAt(config.readyFile, log);
  try {
    const kube = config.cluster?.kubernetes ? await import('./cluster/kube-source') : undefined;
    const podModule = config.cluster?.kubernetes?.pods ? await import('./pods/build') : undefined;
    const pluginModule = config.devicePlugin ? await import('./device-plugin/build') : undefined;
    const hasBlocks = config.networks.some((n) => n.ipv4?.blocks !== undefined || n.ipv6?.blocks !== undefined);
    const blockModule = hasBlocks ? await import('./ipam/blocks/build') : undefined;
    const { deps, reconciler, drainer, background } = buildServices(config, store.db, {
      log,
      now: opts.now ?? Date.now,
      defaultMetrics: opts.defaultMetrics ?? false,
      ...(kube ? { kubeSource: kube.createKubePeerSource } : {}),
      ...(podModule ? { podServices: podModule.buildPodServices } : {}),
      ...(blockModule ? { blockServices: blockModule.buildBlockServices } : {}),
      ...(pluginModule ? { devicePlugin: pluginModule.buildDevicePlugin } : {}),
    });
    teardown.beforeStore(() => deps.storage.stop());
    teardown.beforeStore(() => drainer.stop());
    teardown.beforeStore(() => reconciler.stop());
    took.step('services');
    // The lock protocol of the delete queue: drain while holding it exclusively, serve, then let go.
    await drainer.lockExclusive(QUEUE_LOCK_WAIT_MS);
    // On a full or read-only disk ferryd still starts, not ready and saying why: it can read, answer DELs
    // (the shim queues them) and probe until the disk is back, where a crash loop would do none of that.
    await reconciler.runOnce().catch((err: unknown) => {
      if (!deps.storage.errorOf(err, 'reconcile')) throw err;
    });
    took.step('reconcile');

    const handingOver = new HandingOver({
      socket: config.socket,
      schemaVersion: SCHEMA_VERSION,
      log,
      graceMs: config.shutdownGraceSec * 1000,
      release: async () => {
        deps.lifecycle.markDraining();
        readyFile.remove();
        await teardown.release();
      },
      onAbandoned: opts.onAbandoned ?? (() => {}),
    });
    const unixApp = await buildApp(deps, { surface: 'unix', handingOver });
    teardown.app(() => unixApp.close());
    took.step('app');
    const socketInode = await listenAtPath((tmp) => unixApp.listen({ path: tmp }), config.socket);
    handingOver.listening(socketInode);
    took.step('listen');
    const { tcp, metrics } = config;
    const tcpApp = tcp ? await listenTcp({ surface: 'tcp', tokens: tokensOf(tcp) }, tcp, deps, teardown) : undefined;
    const metricsApp = metrics ? await listenTcp({ surface: 'metrics' }, metrics, deps, teardown) : undefined;

    deps.lifecycle.markReady();
    readyFile.write(socketInode);
    drainer.unlock();
    drainer.watch();
    reconciler.start();
    // Routes to other nodes (the cluster controller) never hold up this node's pods, nor does the API
    // server (the pod watch; an ADD of a pod it has not delivered asks directly, bounded): the background
    // parts start after ready and stop before the store closes, leaving every route for the next ferryd.
    for (const part of background) {
      teardown.beforeStore(() => part.stop());
      part.start();
    }
    log.info(
      {
        socket: config.socket,
        database: config.database,
        networks: config.networks.map((n) => n.name),
        ...(metricsApp ? { metrics: metricsApp.addresses() } : {}),
        ...(store.from ? { tookOverFrom: store.from.pid } : {}),
        tookMs: took.ms,
      },
      'ferryd ready',
    );

    let stopping: Promise<void> | undefined;
    return {
      lifecycle: deps.lifecycle,
      unixApp,
      ...(tcpApp ? { tcpApp } : {}),
      ...(metricsApp ? { metricsApp } : {}),
      stop() {
        stopping ??= (async () => {
          deps.lifecycle.markDraining();
          readyFile.remove();
          await teardown.all();
          // A socket left at the path by a ferryd that is gone would only be refused; a successor's stays.
          if (handingOver.ownsPath()) rmSync(config.socket, { force: true });
        })();
        return stopping;
      },
    };
  } catch (err) {
    await teardown.all();
    throw err;
  }
}

/** The database, taken over from a ferryd serving the node if one holds it, a corrupt one moved aside loudly. */
async function openStore(config: FerrydConfig, opts: DaemonOptions): Promise<OpenedDb & { from?: { pid: number } }> {
  const store = await openTakingOver(config.database, {
    ...(opts.nativeBinding ? { nativeBinding: opts.nativeBinding } : {}),
    recoverCorrupt: { keep: KEEP_CORRUPT },
    socket: config.socket,
    log: opts.log,
    waitMs: TAKE_OVER_WAIT_MS,
  });
  if (store.recovered) {
    const { reason, movedTo, removed } = store.recovered;
    opts.log.error(
      { database: config.database, movedTo, reason, removedOlderCopies: removed },
      'database corrupt: moved aside, starting with an empty one and rebuilding the endpoints from the node',
    );
    recordRecovery(store.db, store.recovered);
  }
  return store;
}

/** A TCP listener; it closes with the store, so a hand-over frees its port before it answers. */
async function listenTcp(
  opts: AppOptions,
  at: { host: string; port: number },
  deps: AppDeps,
  teardown: Teardown,
): Promise<FerrydApp> {
  const app = await buildApp(deps, opts);
  teardown.beforeStore(() => app.close());
  await app.listen({ host: at.host, port: at.port });
  return app;
}

function tokensOf(tcp: NonNullable<FerrydConfig['tcp']>): NonNullable<AppOptions['tokens']> {
  return { read: readToken(tcp.tokenFile), ...(tcp.adminTokenFile ? { admin: readToken(tcp.adminTokenFile) } : {}) };
}

/**
 * How long each start-up step took, for the 'ferryd ready' line: a taking-over ferryd's steps after
 * 'open' are how long its predecessor holds requests.
 */
function stepTimer() {
  const ms: Record<string, number> = {};
  let from = performance.now();
  return {
    ms,
    step(name: string) {
      const now = performance.now();
      ms[name] = Math.round(now - from);
      from = now;
    },
  };
}

function readToken(path: string): string {
  let token: string;
  try {
    token = readFileSync(path, 'utf8').trim();
  } catch (err) {
    throw new StartupError(`read token file ${path}: ${(err as Error).message}`);
  }
  if (token.length < 16) throw new StartupError(`token file ${path}: a token needs at least 16 characters`);
  return token;
}
