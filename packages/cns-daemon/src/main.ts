/**
 * ferryd's entry: flags and config → startDaemon → signals. Exit 1 with one clear line when it
 * cannot start (bad config, database in use, corrupt or newer database).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { CniError } from '@ferry/shared-types/errors';
import pino from 'pino';
import { loadConfig, parseFlags } from './config';
import { startDaemon } from './daemon';
import { StartupError } from './errors';

export async function main(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  let daemon: Awaited<ReturnType<typeof startDaemon>>;
  let log: pino.Logger;
  let graceMs: number;
  try {
    const flags = parseFlags(argv);
    const { config, file } = loadConfig(flags.config, env, flags.overrides);
    log = pino({ level: config.logLevel, base: { pid: process.pid, name: 'ferryd' } });
    graceMs = config.shutdownGraceSec * 1000;
    log.info({ config: file ?? '(defaults)' }, 'ferryd starting');
    daemon = await startDaemon(config, { log, defaultMetrics: true, ...nativeBindingOption() });
  } catch (err) {
    if (err instanceof StartupError || err instanceof CniError) {
      process.stderr.write(`ferryd: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
  await new Promise<void>((resolve) => {
    const onSignal = (signal: NodeJS.Signals) => {
      log.info({ signal }, 'shutting down: refusing ADD, finishing in-flight requests');
      // In-flight requests get shutdownGraceSec; after that ferryd goes anyway (the database is
      // consistent at every commit, and shims queue what they cannot send).
      const timer = setTimeout(() => {
        log.warn({ graceMs }, 'shutdown grace period over: exiting with requests still open');
        resolve();
      }, graceMs);
      timer.unref();
      daemon.stop().then(resolve, (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        resolve();
      });
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  });
  log.info('ferryd stopped');
  return 0;
}

/** In the dist/ bundle the SQLite addon sits next to the bundle in dist/lib; from sources it is found as usual. */
function nativeBindingOption(): { nativeBinding?: string } {
  const candidate = fileURLToPath(new URL('./better_sqlite3.node', import.meta.url));
  return existsSync(candidate) ? { nativeBinding: candidate } : {};
}
