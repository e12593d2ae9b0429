/**
 * ferryd's entry: flags and config → startDaemon → signals. Exit 1 with one clear line when it
 * cannot start (bad config, database in use, corrupt or newer database).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ip, Iproute2 } from '@ferry/net';
import { nodeRunner } from '@ferry/net/node-runner';
import { CniError } from '@ferry/shared-types/errors';
import pino from 'pino';
import { FERRY_ROUTE_PROTO } from './cluster/kernel';
import { uninstallCluster } from './cluster/uninstall';
import { type FerrydConfig, loadConfig, parseFlags } from './config';
import { startDaemon } from './daemon';
import { StartupError } from './errors';

export async function main(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  let daemon: Awaited<ReturnType<typeof startDaemon>>;
  let log: pino.Logger;
  let graceMs: number;
  // A hand-over whose successor never took the socket: this ferryd ends (exit 1) and the kubelet restarts it.
  let abandoned: string | undefined;
  let onAbandoned = (reason: string) => {
    abandoned = reason;
  };
  // Listening from the start: a SIGTERM during start-up (a long queue drain, say) must still end in an
  // orderly stop, not the default exit with the store open.
  let signalled: NodeJS.Signals | undefined;
  let onSignal = (signal: NodeJS.Signals) => {
    signalled = signal;
  };
  // `on`, not `once`, and a repeat ignored (the grace period bounds the stop; SIGKILL is there for the
  // impatient): with no listener of ours left, signal-exit (execa's child cleanup, subscribed while a
  // child such as `ip` runs) takes itself for the last handler and raises the signal again, killing
  // ferryd mid-shutdown with its device-info files and store left behind.
  let handled = false;
  const handler = (signal: NodeJS.Signals) => {
    if (handled) return;
    handled = true;
    onSignal(signal);
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
  try {
    const flags = parseFlags(argv);
    const { config, file } = loadConfig(flags.config, env, flags.overrides);
    if (flags.check) {
      // Validation only (the DaemonSet's check-config init container runs it): nothing is opened, bound or changed.
      process.off('SIGTERM', handler);
      process.off('SIGINT', handler);
      process.stdout.write(
        `ferryd: config ${file ?? '(defaults)'} is valid (networks: ${config.networks.map((n) => n.name).join(', ')}${clusterSummary(config)}${metricsSummary(config)})\n`,
      );
      return 0;
    }
    if (flags.uninstall) {
      // The DaemonSet's removal step: what ferryd put on the node goes; nothing is started.
      process.off('SIGTERM', handler);
      process.off('SIGINT', handler);
      const r = await uninstallCluster(new Ip(new Iproute2(nodeRunner)), nodeRunner, config.cluster);
      process.stdout.write(
        `ferryd: uninstalled: ${r.routes} routes with proto ${FERRY_ROUTE_PROTO} deleted, VXLAN device ${r.device}, masquerade ${r.masquerade}\n`,
      );
      return 0;
    }
    log = pino({ level: config.logLevel, base: { pid: process.pid, name: 'ferryd' } });
    graceMs = config.shutdownGraceSec * 1000;
    log.info({ config: file ?? '(defaults)' }, 'ferryd starting');
    daemon = await startDaemon(config, {
      log,
      defaultMetrics: true,
      onAbandoned: (reason) => onAbandoned(reason),
      ...nativeBindingOption(),
    });
  } catch (err) {
    process.off('SIGTERM', handler);
    process.off('SIGINT', handler);
    if (err instanceof StartupError || err instanceof CniError) {
      process.stderr.write(`ferryd: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
  const exitCode = await new Promise<number>((resolve) => {
    onAbandoned = (reason: string) => {
      abandoned = reason;
      daemon.stop().then(
        () => resolve(1),
        () => resolve(1),
      );
    };
    onSignal = (signal: NodeJS.Signals) => {
      log.info({ signal }, 'shutting down: refusing ADD, finishing in-flight requests');
      // In-flight requests get shutdownGraceSec; after that ferryd goes anyway (the database is
      // consistent at every commit, and shims queue what they cannot send).
      const timer = setTimeout(() => {
        log.warn({ graceMs }, 'shutdown grace period over: exiting with requests still open');
        resolve(0);
      }, graceMs);
      timer.unref();
      daemon.stop().then(
        () => resolve(0),
        (err: unknown) => {
          log.error({ err }, 'shutdown failed');
          resolve(0);
        },
      );
    };
    if (signalled) onSignal(signalled);
    else if (abandoned !== undefined) onAbandoned(abandoned);
  });
  log.info(abandoned ? { reason: abandoned } : {}, 'ferryd stopped');
  return exitCode;
}

function clusterSummary(config: FerrydConfig): string {
  const c = config.cluster;
  if (!c) return '';
  const source = c.kubernetes ? 'peers from Kubernetes' : `${c.peers.length} static peers`;
  return `; cluster: node ${c.nodeName ?? '(unnamed)'}, routing ${c.routing}, ${source}`;
}

function metricsSummary(config: FerrydConfig): string {
  return config.metrics ? `; metrics on ${config.metrics.host}:${config.metrics.port}` : '';
}

/** In the dist/ bundle the SQLite addon sits next to the bundle in dist/lib; from sources it is found as usual. */
function nativeBindingOption(): { nativeBinding?: string } {
  const candidate = fileURLToPath(new URL('./better_sqlite3.node', import.meta.url));
  return existsSync(candidate) ? { nativeBinding: candidate } : {};
}
