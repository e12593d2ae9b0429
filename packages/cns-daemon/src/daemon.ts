/**
 * Runs ferryd: open the store, build the services, reconcile, listen on the unix socket (and the
 * optional TCP listener), then report ready. main.ts adds config, signals and exit codes.
 */
import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { buildApp, type FerrydApp } from './app';
import type { FerrydConfig } from './config';
import { StartupError } from './errors';
import type { Lifecycle } from './lifecycle';
import { recordRecovery } from './node-state/build';
import { buildServices } from './services';
import { prepareSocketPath, restrictSocket } from './socket';
import { openDatabase } from './store/db';

/** How long start-up waits for shims that are writing to the delete queue. */
const QUEUE_LOCK_WAIT_MS = 10_000;
/** Corrupt databases kept next to the database for the post-mortem (the oldest go first). */
const KEEP_CORRUPT = 3;

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
  /** Refuses ADD from now on, finishes in-flight requests, closes listeners and the database. */
  stop(): Promise<void>;
}

export async function startDaemon(config: FerrydConfig, opts: DaemonOptions): Promise<Daemon> {
  const { log } = opts;
  const store = openDatabase(config.database, {
    ...(opts.nativeBinding ? { nativeBinding: opts.nativeBinding } : {}),
    recoverCorrupt: { keep: KEEP_CORRUPT },
  });
  if (store.recovered) {
    const { reason, movedTo, removed } = store.recovered;
    log.error(
      { database: config.database, movedTo, reason, removedOlderCopies: removed },
      'database corrupt: moved aside, starting with an empty one and rebuilding the endpoints from the node',
    );
    recordRecovery(store.db, store.recovered);
  }
  // Undone in this order on stop, or on a failed start.
  const cleanups: (() => Promise<void> | void)[] = [() => store.close()];
  const undo = async () => {
    for (const c of cleanups)
      await Promise.resolve(c()).catch((err: unknown) => log.warn({ err }, 'cleanup step failed'));
  };
  try {
    const kube = config.cluster?.kubernetes ? await import('./cluster/kube-source') : undefined;
    const { deps, reconciler, drainer, cluster } = buildServices(config, store.db, {
      log,
      now: opts.now ?? Date.now,
      defaultMetrics: opts.defaultMetrics ?? false,
      ...(kube ? { kubeSource: kube.createKubePeerSource } : {}),
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

    let tcpApp: FerrydApp | undefined;
    if (config.tcp) {
      const tokens = {
        read: readToken(config.tcp.tokenFile),
        ...(config.tcp.adminTokenFile ? { admin: readToken(config.tcp.adminTokenFile) } : {}),
      };
      const app = await buildApp(deps, { surface: 'tcp', tokens });
      cleanups.unshift(() => app.close());
      await app.listen({ host: config.tcp.host, port: config.tcp.port });
      tcpApp = app;
    }

    deps.lifecycle.markReady();
    drainer.unlock();
    drainer.watch();
    reconciler.start();
    if (cluster) {
      // Routes to other nodes never hold up this node's pods: the controller starts after ready and
      // stops before the store closes, leaving every route in place for the next ferryd.
      cleanups.unshift(() => cluster.stop());
      cluster.start();
    }
    log.info(
      { socket: config.socket, database: config.database, networks: config.networks.map((n) => n.name) },
      'ferryd ready',
    );

    let stopping: Promise<void> | undefined;
    return {
      lifecycle: deps.lifecycle,
      unixApp,
      ...(tcpApp ? { tcpApp } : {}),
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
