/**
 * ferry-cni's entry: env + stdin → exactly one command → exactly one JSON document on stdout (or none,
 * for DEL/CHECK/STATUS/GC success) → exit code. Logs go to the log file only.
 */
import { type CniVersion, isSupportedVersion, LATEST_VERSION } from '@ferry/shared-types/cni/versions';
import { DEFAULT_DAEMON_TIMEOUTS, DEFAULT_SOCKET } from '@ferry/shared-types/config/defaults';
import { CniError, Code, toErrorBody } from '@ferry/shared-types/errors';
import { aboutText, cmdVersion } from './commands/version';
import type { ShimConf } from './config';
import type { Deps } from './deps';
import { type CmdArgs, checkNetns, isOwnNetns, parseEnv } from './env';
import { type Level, openLog } from './log';
import type { Runtime } from './runtime/runtime';
import { declaredVersion, decodeStdin } from './stdin';

export interface Io {
  /** All of stdin, or undefined when there is none (a terminal). */
  readStdin(): Promise<string | undefined>;
  print(json: string): void;
  printErr(text: string): void;
}

type Handler = (args: CmdArgs, conf: ShimConf, d: Deps) => Promise<unknown>;
// Loaded on demand: every module evaluated at start-up (and every zod schema it builds) adds to each
// pod's ADD, so a command brings in only its own graph (docs/shipping.md has the numbers).
const commands: Record<Exclude<CmdArgs['command'], 'VERSION'>, () => Promise<Handler>> = {
  ADD: async () => (await import('./commands/add')).cmdAdd,
  DEL: async () => (await import('./commands/del')).cmdDel,
  CHECK: async () => (await import('./commands/check')).cmdCheck,
  STATUS: async () => (await import('./commands/status')).cmdStatus,
  GC: async () => (await import('./commands/gc')).cmdGc,
};

/** Where logs go before the config names a file (tests point it at their temp dir). */
export interface MainOptions {
  defaultLogFile?: string;
}

export async function main(env: NodeJS.ProcessEnv, io: Io, rt: Runtime, opts: MainOptions = {}): Promise<number> {
  if (!env.CNI_COMMAND) {
    io.printErr(aboutText());
    return 0;
  }
  const input = await readInput(io);
  const early = peekConfig(input);
  // Even an env error is logged to the config's log file and printed in the config's version.
  const log = openLog(early.logFile ?? opts.defaultLogFile);
  let version: CniVersion = early.version ?? LATEST_VERSION;
  try {
    const args = parseEnv(env);
    if (args.command === 'VERSION') {
      // As skel: VERSION answers whatever stdin holds.
      io.print(JSON.stringify(cmdVersion(early.version)));
      return 0;
    }
    if ('error' in input) throw input.error;
    const handler = commands[args.command]();
    const [{ parseNetConf }, { DaemonClient }, { Ip }] = await Promise.all([
      import('./config'),
      import('./daemon-client'),
      import('@ferry/net'),
    ]);
    const conf = await parseNetConf(input.doc, args.command);
    version = conf.cniVersion;
    // logFile needs no second look: the peek took it by the schema's own rule (an absolute path).
    if (conf.logLevel) log.setLevel(conf.logLevel satisfies Level);
    if (args.command === 'ADD' || args.command === 'CHECK') checkNetns(args, env);
    const clog = log.child({
      cmd: args.command,
      containerId: args.containerId || undefined,
      ifName: args.ifName || undefined,
      netns: args.netns || undefined,
      network: conf.name,
    });
    const t = conf.daemonTimeouts ?? {};
    const deps: Deps = {
      daemon: new DaemonClient(
        rt,
        conf.daemonSocket ?? DEFAULT_SOCKET,
        {
          connectMs: t.connectMs ?? DEFAULT_DAEMON_TIMEOUTS.connectMs,
          requestMs: t.requestMs ?? DEFAULT_DAEMON_TIMEOUTS.requestMs,
        },
        clog,
      ),
      ip: new Ip(rt.run, rt.links),
      log: clog,
      addWaitMs: t.addWaitMs ?? DEFAULT_DAEMON_TIMEOUTS.addWaitMs,
      delWaitMs: t.delWaitMs ?? DEFAULT_DAEMON_TIMEOUTS.delWaitMs,
      rt,
    };
    clog.debug({}, 'config parsed');
    if (args.command === 'DEL' && args.netns && isOwnNetns(args.netns)) {
      // The release still happens (a pod must never stay Terminating), but nothing in the node's own
      // namespace is touched as if it were the pod's: DEL goes on as if the netns were gone.
      clog.warn({}, "CNI_NETNS is the node's own network namespace: releasing without touching it");
      args.netns = '';
    }
    const result = await (await handler)(args, conf, deps);
    if (result !== undefined) io.print(JSON.stringify(result));
    return 0;
  } catch (err) {
    const cniErr =
      err instanceof CniError
        ? err
        : new CniError(Code.Internal, `internal error: ${(err as Error)?.message ?? String(err)}`);
    log.error(
      { err, code: cniErr.code, cmd: env.CNI_COMMAND, containerId: env.CNI_CONTAINERID, ifName: env.CNI_IFNAME },
      cniErr.message,
    );
    io.print(JSON.stringify(toErrorBody(cniErr, version)));
    return 1;
  }
}

/** stdin read and decoded once, for every later look; a failure is kept for the command to report. */
async function readInput(io: Io): Promise<{ doc: Record<string, unknown> } | { error: CniError }> {
  let stdin: string;
  try {
    stdin = (await io.readStdin()) ?? '';
  } catch (err) {
    return { error: new CniError(Code.IoFailure, `read network config from stdin: ${(err as Error).message}`) };
  }
  try {
    return { doc: decodeStdin(stdin) };
  } catch (err) {
    return { error: err as CniError };
  }
}

/** What the config says before it is validated: its version (if Ferry speaks it) and its log file. */
function peekConfig(input: Awaited<ReturnType<typeof readInput>>): { version?: CniVersion; logFile?: string } {
  if ('error' in input) return {};
  const v = declaredVersion(input.doc);
  const logFile =
    typeof input.doc.logFile === 'string' && input.doc.logFile.startsWith('/') ? input.doc.logFile : undefined;
  return { ...(isSupportedVersion(v) ? { version: v } : {}), ...(logFile ? { logFile } : {}) };
}
