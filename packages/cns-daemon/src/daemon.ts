/**
 * Runs ferryd: open the store, build the services, reconcile, listen on the unix socket (and the
 * optional TCP and scrape listeners), then report ready. main.ts adds config, signals and exit codes.
 */
import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { type AppOptions, buildApp, type FerrydApp } from './app';
import type { FerrydConfig } from './config';
import { StartupError } from './errors';
import type { Lifecycle } from './lifecycle';
import { buildServices } from './services';
import { prepareSocketPath, restrictSocket } from './socket';
import { openDatabase } from './store/db';

/** How long start-up waits for shims that are writing to the delete queue. */
const QUEUE_LOCK_WAIT_MS = 10_000;

export interface DaemonOptions {
  log: Logger;
  nativeBinding?: string;
  now?: () => number;
  /** Collect process metrics (off where several daemons share a process). */
  defaultMetrics?: boolean;
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
  const store = openDatabase(config.database, opts.nativeBinding ? { nativeBinding: opts.nativeBinding } : {});
  // Undone in this order on stop, or on a failed start.
  const cleanups: (() => Promise<void> | void)[] = [() => store.close()];
  const undo = async () => {
    for (const c of cleanups)
      await Promise.resolve(c()).catch((err: unknown) => log.warn({ err }, 'cleanup step failed'));
  };
  try {
    const kube = config.cluster?.kubernetes ? await import('./cluster/kube-source') : undefined;
    const podModule = config.cluster?.kubernetes?.pods ? await import('./pods/build') : undefined;
    const pluginModule = config.devicePlugin ? await import('./device-plugin/build') : undefined;
    const { deps, reconciler, drainer, background } = buildServices(config, store.db, {
      log,
      now: opts.now ?? Date.now,
      defaultMetrics: opts.defaultMetrics ?? false,
      ...(kube ? { kubeSource: kube.createKubePeerSource } : {}),
      ...(podModule ? { podServices: podModule.buildPodServices } : {}),
      ...(pluginModule ? { devicePlugin: pluginModule.buildDevicePlugin } : {}),
    });
    // Run first to last: listeners close (in-flight requests finish), the reconciler stops (it starts
    // drains), the drainer finishes its pass, and only then the store closes.
    cleanups.unshift(() => deps.storage.stop());
    cleanups.unshift(() => drainer.stop());
    cleanups.unshift(() => reconciler.stop());
    // The lock protocol of the delete queue: drain while holding it exclusively, serve, then let go.
    await drainer.lockExclusive(QUEUE_LOCK_WAIT_MS);
    // On a full or read-only disk ferryd still starts, not ready and saying why: it can read, answer DELs
    // (the shim queues them) and probe until the disk is back, where a crash loop would do none of that.
    await reconciler.runOnce().catch((err: unknown) => {
      if (!deps.storage.errorOf(err, 'reconcile')) throw err;
    });

    const unixApp = await buildApp(deps, { surface: 'unix' });
    cleanups.unshift(() => unixApp.close());
    prepareSocketPath(config.socket);
    await unixApp.listen({ path: config.socket });
    restrictSocket(config.socket);

    // Each TCP surface: built, closed first on stop, listening.
    const listenTcp = async (opts: AppOptions, at: { host: string; port: number }) => {
      const app = await buildApp(deps, opts);
      cleanups.unshift(() => app.close());
      await app.listen(at);
      return app;
    };
    const { tcp, metrics } = config;
    const tcpApp = tcp ? await listenTcp({ surface: 'tcp', tokens: tokensOf(tcp) }, tcp) : undefined;
    const metricsApp = metrics ? await listenTcp({ surface: 'metrics' }, metrics) : undefined;

    deps.lifecycle.markReady();
    drainer.unlock();
    drainer.watch();
    reconciler.start();
    // Routes to other nodes (the cluster controller) never hold up this node's pods, nor does the API
    // server (the pod watch; an ADD of a pod it has not delivered asks directly, bounded): the background
    // parts start after ready and stop before the store closes, leaving every route for the next ferryd.
    for (const part of background) {
      cleanups.unshift(() => part.stop());
      part.start();
    }
    log.info(
      {
        socket: config.socket,
        database: config.database,
        networks: config.networks.map((n) => n.name),
        ...(metricsApp ? { metrics: metricsApp.addresses() } : {}),
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
          await undo();
        })();
        return stopping;
      },
    };
  } catch (err) {
    await undo();
    throw err;
  }
}

function tokensOf(tcp: NonNullable<FerrydConfig['tcp']>): NonNullable<AppOptions['tokens']> {
  return { read: readToken(tcp.tokenFile), ...(tcp.adminTokenFile ? { admin: readToken(tcp.adminTokenFile) } : {}) };
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
