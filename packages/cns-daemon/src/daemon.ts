/**
 * Runs ferryd: open the store (taking it over from the ferryd serving the node, if one does), build the
 * services, reconcile, put the unix socket at its path (and the optional TCP listener), then report
 * ready. main.ts adds config, signals and exit codes.
 */
import { readFileSync, rmSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { writeFileAtomically } from '@ferry/files';
import type { Logger } from 'pino';
import { buildApp, type FerrydApp } from './app';
import type { FerrydConfig } from './config';
import { StartupError } from './errors';
import { HandingOver } from './handover/handing-over';
import { openTakingOver } from './handover/taking-over';
import type { Lifecycle } from './lifecycle';
import { recordRecovery } from './node-state/build';
import { buildServices } from './services';
import { listenAtPath } from './socket';
import { SCHEMA_VERSION } from './store/migrations/index';

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
  /** Refuses ADD from now on, finishes in-flight requests, closes listeners and the database. */
  stop(): Promise<void>;
}

type Step = () => Promise<unknown> | unknown;

export async function startDaemon(config: FerrydConfig, opts: DaemonOptions): Promise<Daemon> {
  const { log } = opts;
  // How long each start-up step took (the 'ferryd ready' line): a taking-over ferryd's steps after the
  // database opened are how long the old one holds requests.
  const tookMs: Record<string, number> = {};
  let stepStart = performance.now();
  const step = (name: string) => {
    const now = performance.now();
    tookMs[name] = Math.round(now - stepStart);
    stepStart = now;
  };
  const store = await openTakingOver(config.database, {
    ...(opts.nativeBinding ? { nativeBinding: opts.nativeBinding } : {}),
    recoverCorrupt: { keep: KEEP_CORRUPT },
    socket: config.socket,
    log,
    waitMs: TAKE_OVER_WAIT_MS,
  });
  if (store.recovered) {
    const { reason, movedTo, removed } = store.recovered;
    log.error(
      { database: config.database, movedTo, reason, removedOlderCopies: removed },
      'database corrupt: moved aside, starting with an empty one and rebuilding the endpoints from the node',
    );
    recordRecovery(store.db, store.recovered);
  }
  step('open');
  // Everything that uses the store, run first to last by stop() and by a hand-over: listeners that
  // share the store close (in-flight requests finish), the reconciler stops (it starts drains), the
  // drainer finishes its pass, and only then the store closes. The unix socket's app is apart: during
  // a hand-over it stays, holding requests for the successor.
  const storeUsers: Step[] = [() => store.close()];
  const readyFile = readyFileOf(config.readyFile, log);
  const apps: Step[] = [];
  const runAll = async (steps: Step[]) => {
    for (const step of steps)
      await Promise.resolve()
        .then(step)
        .catch((err: unknown) => log.warn({ err }, 'cleanup step failed'));
  };
  let released: Promise<void> | undefined;
  const release = () => {
    released ??= runAll(storeUsers);
    return released;
  };
  const undo = async () => {
    await runAll(apps);
    await release();
  };
  try {
    const kube = config.cluster?.kubernetes ? await import('./cluster/kube-source') : undefined;
    const { deps, reconciler, drainer, cluster } = buildServices(config, store.db, {
      log,
      now: opts.now ?? Date.now,
      defaultMetrics: opts.defaultMetrics ?? false,
      ...(kube ? { kubeSource: kube.createKubePeerSource } : {}),
    });
    storeUsers.unshift(() => deps.storage.stop());
    storeUsers.unshift(() => drainer.stop());
    storeUsers.unshift(() => reconciler.stop());
    step('services');
    // The lock protocol of the delete queue: drain while holding it exclusively, serve, then let go.
    await drainer.lockExclusive(QUEUE_LOCK_WAIT_MS);
    // On a full or read-only disk ferryd still starts, not ready and saying why: it can read, answer DELs
    // (the shim queues them) and probe until the disk is back, where a crash loop would do none of that.
    await reconciler.runOnce().catch((err: unknown) => {
      if (!deps.storage.errorOf(err, 'reconcile')) throw err;
    });
    step('reconcile');

    const handingOver = new HandingOver({
      socket: config.socket,
      schemaVersion: SCHEMA_VERSION,
      log,
      graceMs: config.shutdownGraceSec * 1000,
      release: async () => {
        deps.lifecycle.markDraining();
        readyFile.remove();
        await release();
      },
      onAbandoned: opts.onAbandoned ?? (() => {}),
    });
    const unixApp = await buildApp(deps, { surface: 'unix', handingOver });
    apps.unshift(() => unixApp.close());
    step('app');
    const socketInode = await listenAtPath((tmp) => unixApp.listen({ path: tmp }), config.socket);
    handingOver.listening(socketInode);
    step('listen');

    let tcpApp: FerrydApp | undefined;
    if (config.tcp) {
      const tokens = {
        read: readToken(config.tcp.tokenFile),
        ...(config.tcp.adminTokenFile ? { admin: readToken(config.tcp.adminTokenFile) } : {}),
      };
      const app = await buildApp(deps, { surface: 'tcp', tokens });
      // With the store: a hand-over frees the port for the successor before it answers.
      storeUsers.unshift(() => app.close());
      await app.listen({ host: config.tcp.host, port: config.tcp.port });
      tcpApp = app;
    }

    deps.lifecycle.markReady();
    readyFile.write(socketInode);
    drainer.unlock();
    drainer.watch();
    reconciler.start();
    if (cluster) {
      // Routes to other nodes never hold up this node's pods: the controller starts after ready and
      // stops before the store closes, leaving every route in place for the next ferryd.
      storeUsers.unshift(() => cluster.stop());
      cluster.start();
    }
    log.info(
      {
        socket: config.socket,
        database: config.database,
        networks: config.networks.map((n) => n.name),
        ...(store.from ? { tookOverFrom: store.from.pid } : {}),
        tookMs,
      },
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
          readyFile.remove();
          await undo();
          // A socket left at the path by a ferryd that is gone would only be refused; a successor's stays.
          if (handingOver.ownsPath()) rmSync(config.socket, { force: true });
        })();
        return stopping;
      },
    };
  } catch (err) {
    await undo();
    throw err;
  }
}

/**
 * The pod's own readiness (config.readyFile): present, naming the socket's inode, only while this ferryd
 * serves the socket. The socket path alone cannot tell a surge pod's ferryd from the one it replaces:
 * both pods' probes reach whoever serves it.
 */
function readyFileOf(path: string | undefined, log: Logger) {
  return {
    write(socketInode: number) {
      if (!path) return;
      try {
        writeFileAtomically(dirname(path), basename(path), `${socketInode}\n`, { mode: 0o644 });
      } catch (err) {
        log.warn({ err, path }, 'could not write the ready file: the readiness probe will say not ready');
      }
    },
    remove() {
      if (path) rmSync(path, { force: true });
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
