/**
 * CNI_* variables (SPEC.md §2, enforced as pkg/skel getCmdArgsFromEnv does). Missing variables are
 * reported together, invalid ones by name, both with code 4.
 */
import { statSync } from '@ferry/files/fs';
import { type CniArgs, parseCniArgs } from '@ferry/shared-types/cni/args';
import { containerIdProblem, ifNameProblem } from '@ferry/shared-types/cni/validate';
import { CniError, Code } from '@ferry/shared-types/errors';

export const COMMANDS = ['ADD', 'DEL', 'CHECK', 'STATUS', 'GC', 'VERSION'] as const;
export type Command = (typeof COMMANDS)[number];

export interface CmdArgs {
  command: Command;
  containerId: string;
  /** Empty on a DEL whose netns is already gone. */
  netns: string;
  ifName: string;
  args: CniArgs;
  path: string;
}

type Var = 'CNI_CONTAINERID' | 'CNI_NETNS' | 'CNI_IFNAME' | 'CNI_PATH';
// Which variables each command requires. CNI_NETNS is optional on DEL (the netns may be gone).
const REQUIRED: Record<Command, readonly Var[]> = {
  ADD: ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME', 'CNI_PATH'],
  CHECK: ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME', 'CNI_PATH'],
  DEL: ['CNI_CONTAINERID', 'CNI_IFNAME', 'CNI_PATH'],
  GC: ['CNI_PATH'],
  STATUS: ['CNI_PATH'],
  VERSION: [],
};

function isCommand(s: string): s is Command {
  return (COMMANDS as readonly string[]).includes(s);
}

/** Parses the environment for `command` (already known to be set). Throws CniError(InvalidEnv). */
export function parseEnv(env: NodeJS.ProcessEnv): CmdArgs {
  const command = env.CNI_COMMAND ?? '';
  if (!isCommand(command)) throw new CniError(Code.InvalidEnv, `unknown CNI_COMMAND: ${command}`);
  const missing = REQUIRED[command].filter((v) => !env[v]);
  if (missing.length > 0) throw new CniError(Code.InvalidEnv, `required env variables [${missing.join(',')}] missing`);
  // Only the attachment commands look at the attachment's variables. libcni validates a config by
  // running VERSION with CNI_NETNS=dummy and friends; those must not be judged.
  if (command !== 'ADD' && command !== 'DEL' && command !== 'CHECK') {
    return { command, containerId: '', netns: '', ifName: '', args: { ignoreUnknown: true }, path: env.CNI_PATH ?? '' };
  }
  const containerId = env.CNI_CONTAINERID ?? '';
  const ifName = env.CNI_IFNAME ?? '';
  const netns = env.CNI_NETNS ?? '';
  const idProblem = containerIdProblem(containerId);
  if (idProblem) throw new CniError(Code.InvalidEnv, `invalid CNI_CONTAINERID "${containerId}": ${idProblem}`);
  const nameProblem = ifNameProblem(ifName);
  if (nameProblem) throw new CniError(Code.InvalidEnv, `invalid CNI_IFNAME "${ifName}": ${nameProblem}`);
  if (netns && !netns.startsWith('/')) {
    throw new CniError(Code.InvalidEnv, `invalid CNI_NETNS "${netns}": must be an absolute path`);
  }
  return { command, containerId, netns, ifName, args: parseCniArgs(env.CNI_ARGS), path: env.CNI_PATH ?? '' };
}

/**
 * ADD and CHECK need the pod's netns to exist and not be the plugin's own (code 8, skipped when
 * CNI_NETNS_OVERRIDE is 1/true, as skel does). Checked before anything is changed.
 */
export function checkNetns(args: CmdArgs, env: NodeJS.ProcessEnv): void {
  let target: { ino: number | bigint; dev: number | bigint };
  try {
    target = statSync(args.netns);
  } catch (err) {
    throw new CniError(
      Code.InvalidEnv,
      `invalid CNI_NETNS "${args.netns}": ${(err as NodeJS.ErrnoException).code ?? 'cannot stat'}`,
    );
  }
  const override = (env.CNI_NETNS_OVERRIDE ?? '').toLowerCase();
  if (override === '1' || override === 'true') return;
  if (isNodeNetns(target)) {
    throw new CniError(Code.InvalidNetns, `CNI_NETNS "${args.netns}" is the plugin's own network namespace`);
  }
}

/**
 * True when `netns` is the node's namespace (this process's, or init's): a DEL must then clean nothing
 * there, whatever the path looked like (a reused /proc/<pid>, a bind mount, `..`). No override: DEL
 * never has a reason to clean the node.
 */
export function isOwnNetns(netns: string): boolean {
  try {
    return isNodeNetns(statSync(netns));
  } catch {
    return false;
  }
}

function isNodeNetns(target: { ino: number | bigint; dev: number | bigint }): boolean {
  for (const own of ['/proc/self/ns/net', '/proc/1/ns/net']) {
    try {
      const s = statSync(own);
      if (s.ino === target.ino && s.dev === target.dev) return true;
    } catch {
      // Not readable here (no /proc): nothing to compare with.
    }
  }
  return false;
}
