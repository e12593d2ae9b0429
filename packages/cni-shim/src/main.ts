/**
 * ferry-cni's entry: env + stdin → exactly one command → exactly one JSON document on stdout (or none,
 * for DEL/CHECK/STATUS/GC success) → exit code. Logs go to the log file only.
 */

import { Ip, Iproute2 } from '@ferry/net';
import { Rtnetlink } from '@ferry/net/rtnetlink';
import { type CniVersion, isSupportedVersion, LATEST_VERSION } from '@ferry/shared-types/cni/versions';
import {
  DEFAULT_DAEMON_TIMEOUTS,
  DEFAULT_SOCKET,
  SHIM_LOG_MAX_BACKUPS_LIMIT,
  SHIM_LOG_MAX_SIZE_KIB_LIMIT,
} from '@ferry/shared-types/config/defaults';
import { CniError, Code, toErrorBody } from '@ferry/shared-types/errors';
import { cmdAdd } from './commands/add';
import { cmdCheck } from './commands/check';
import { cmdDel } from './commands/del';
import { aboutText, cmdVersion } from './commands/version';
import { parseNetConf, type ShimConf } from './config';
import { DaemonClient } from './daemon-client';
import type { Deps } from './deps';
import { type CmdArgs, checkNetns, parseEnv } from './env';
import { DEFAULT_ROTATION, type Level, type Logger, openLog } from './log';
import type { Rotation } from './log-rotation';
import type { Runtime } from './runtime/runtime';
import { declaredVersion, decodeStdin } from './stdin';

export interface Io {
  /** All of stdin, or undefined when there is none (a terminal). */
  readStdin(): Promise<string | undefined>;
  print(json: string): void;
  printErr(text: string): void;
}

type Handler = (args: CmdArgs, conf: ShimConf, deps: Deps) => Promise<unknown>;
// ADD, CHECK and DEL (with the config check, the ferryd client and the netlink layer) are imported
// statically: they are most of what a pod's runs load anyway, and each module Bun loads on its own costs
// (bytecode lookup, link, evaluation); as one chunk they cost ~1.3 ms less CPU per run than as the ~20
// small chunks of per-command imports (docs/shipping.md). STATUS and GC, rare, stay on demand, and so does
// everything that builds a zod schema.
const commands: Record<Exclude<CmdArgs['command'], 'VERSION'>, () => Promise<Handler>> = {
  ADD: async () => cmdAdd,
  DEL: async () => cmdDel,
  CHECK: async () => cmdCheck,
  STATUS: async () => (await import('./commands/status')).cmdStatus,
  GC: async () => (await import('./commands/gc')).cmdGc,
};

/** Where logs go before the config names a file (tests point it at their temp dir). */
export interface MainOptions {
  defaultLogFile?: string;
}

export async function main(env: NodeJS.ProcessEnv, io: Io, runtime: Runtime, opts: MainOptions = {}): Promise<number> {
  if (!env.CNI_COMMAND) {
    io.printErr(aboutText());
    return 0;
  }
  const input = await readInput(io);
  const early = peekConfig(input);
  // Even an env error is logged to the config's log file and printed in the config's version.
  const log = openLog(early.logFile ?? opts.defaultLogFile, 'info', early.rotation);
  try {
    return await run(env, io, runtime, input, early, log);
  } finally {
    log.close();
  }
}

/** One command, from the parsed env and config to the printed answer and the exit code. */
async function run(
  env: NodeJS.ProcessEnv,
  io: Io,
  runtime: Runtime,
  input: Awaited<ReturnType<typeof readInput>>,
  early: ReturnType<typeof peekConfig>,
  log: Logger,
): Promise<number> {
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
    const conf = await parseNetConf(input.doc, args.command);
    version = conf.cniVersion;
    // logFile needs no second look: the peek took it by the schema's own rule (an absolute path).
    if (conf.logLevel) log.setLevel(conf.logLevel satisfies Level);
    if (args.command === 'ADD' || args.command === 'CHECK') checkNetns(args, env);
    const result = await (await handler)(args, conf, depsOf(args, conf, runtime, log));
    if (result !== undefined) io.print(JSON.stringify(result));
    return 0;
  } catch (err) {
    printError(err, env, version, io, log);
    return 1;
  }
}

/** What a command works with: ferryd's client with the config's timeouts, the netlink layer, its own log. */
function depsOf(args: CmdArgs, conf: ShimConf, runtime: Runtime, log: Logger): Deps {
  const commandLog = log.child({
    cmd: args.command,
    containerId: args.containerId || undefined,
    ifName: args.ifName || undefined,
    netns: args.netns || undefined,
    network: conf.name,
  });
  const timeouts = daemonTimeoutsOf(conf);
  const socket = conf.daemonSocket ?? DEFAULT_SOCKET;
  commandLog.debug({}, 'config parsed');
  return {
    daemon: new DaemonClient(
      runtime,
      socket,
      { connectMs: timeouts.connectMs, requestMs: timeouts.requestMs },
      commandLog,
    ),
    ip: ipOf(runtime),
    log: commandLog,
    addWaitMs: timeouts.addWaitMs,
    delWaitMs: timeouts.delWaitMs,
    runtime,
  };
}

/** The config's daemonTimeouts, each one it leaves out at its default. */
function daemonTimeoutsOf(conf: ShimConf): Record<keyof typeof DEFAULT_DAEMON_TIMEOUTS, number> {
  const t = conf.daemonTimeouts ?? {};
  return {
    connectMs: t.connectMs ?? DEFAULT_DAEMON_TIMEOUTS.connectMs,
    requestMs: t.requestMs ?? DEFAULT_DAEMON_TIMEOUTS.requestMs,
    addWaitMs: t.addWaitMs ?? DEFAULT_DAEMON_TIMEOUTS.addWaitMs,
    delWaitMs: t.delWaitMs ?? DEFAULT_DAEMON_TIMEOUTS.delWaitMs,
  };
}

/** The one JSON of a failed command, in the config's version; anything not a CniError is 999, logged. */
function printError(err: unknown, env: NodeJS.ProcessEnv, version: CniVersion, io: Io, log: Logger): void {
  const cniErr =
    err instanceof CniError
      ? forRuntime(err)
      : new CniError(Code.Internal, `internal error: ${(err as Error)?.message ?? String(err)}`);
  log.error(
    { err, code: cniErr.code, cmd: env.CNI_COMMAND, containerId: env.CNI_CONTAINERID, ifName: env.CNI_IFNAME },
    cniErr.message,
  );
  io.print(JSON.stringify(toErrorBody(cniErr, version)));
}

/** Links over rtnetlink where the runtime has its system calls (what it cannot do, and elsewhere: iproute2). */
function ipOf(runtime: Runtime): Ip {
  const iproute2 = new Iproute2(runtime.run);
  return new Ip(runtime.rtnl ? new Rtnetlink(runtime.rtnl, iproute2) : iproute2);
}

/** ferryd's storage failure is transient for the runtime: CNI's 11 (try again later), ferryd's words. */
function forRuntime(err: CniError): CniError {
  if (err.code !== Code.StorageFailure) return err;
  return new CniError(Code.TryAgainLater, err.message, err.details, { cause: err });
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

/**
 * What the config says before it is validated: its version (if Ferry speaks it), its log file and the
 * log's rotation, each taken only when valid by the schema's rule (parseNetConf reports invalid ones).
 */
function peekConfig(input: Awaited<ReturnType<typeof readInput>>): {
  version?: CniVersion;
  logFile?: string;
  rotation: Rotation;
} {
  if ('error' in input) return { rotation: DEFAULT_ROTATION };
  const { doc } = input;
  const v = declaredVersion(doc);
  const logFile = typeof doc.logFile === 'string' && doc.logFile.startsWith('/') ? doc.logFile : undefined;
  const sizeKiB = intUpTo(doc.logMaxSizeKiB, SHIM_LOG_MAX_SIZE_KIB_LIMIT);
  const backups = intUpTo(doc.logMaxBackups, SHIM_LOG_MAX_BACKUPS_LIMIT);
  return {
    ...(isSupportedVersion(v) ? { version: v } : {}),
    ...(logFile ? { logFile } : {}),
    rotation: {
      maxBytes: sizeKiB === undefined ? DEFAULT_ROTATION.maxBytes : sizeKiB * 1024,
      maxBackups: backups ?? DEFAULT_ROTATION.maxBackups,
    },
  };
}

const intUpTo = (v: unknown, max: number): number | undefined =>
  typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= max ? v : undefined;
