import { CniError, Code } from '@ferry/shared-types/errors';

/** What one process run left behind. */
export interface RunResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/**
 * Spawns argv[0] with argv[1..] (never through a shell), writes `input` to its stdin and resolves when
 * it exits. The shim passes a Bun-native runner, ferryd and tests a Node one (node-runner.ts).
 */
export type Runner = (argv: readonly string[], input?: string) => Promise<RunResult>;

/**
 * How long one iproute2 process may take. A driver wedged under rtnl_lock (an SR-IOV VF reset) or a
 * netns held by a process in D state would otherwise hang ADD past the runtime's own timeout, and the
 * rollback would never run.
 */
export const RUN_TIMEOUT_MS = 30_000;

/** The result of a process killed for running past RUN_TIMEOUT_MS; the error names the timeout. */
export function timedOut(stdout: string, stderr: string): RunResult {
  return { exitCode: 124, stdout, stderr: `${stderr}\nkilled after ${RUN_TIMEOUT_MS} ms without finishing` };
}

/** An iproute2 command failed. Code NetlinkFailure; the message carries the command's own error. */
export class NetError extends CniError {
  readonly argv: readonly string[];
  readonly stderr: string;
  /** For a batch: the index of the line that failed (the lines before it took effect). */
  readonly failedLine: number | undefined;
  constructor(action: string, result: RunResult, argv: readonly string[], failedLine?: number) {
    const why = result.stderr.trim().split('\n').filter(Boolean).slice(-2).join('; ') || `exit code ${result.exitCode}`;
    super(Code.NetlinkFailure, `${action}: ${why}`);
    this.name = 'NetError';
    this.argv = argv;
    this.stderr = result.stderr;
    this.failedLine = failedLine;
  }
}

/**
 * True when an error says a name is taken: "File exists", or with the kernel's extended acks "An
 * interface with the same name exists in the target netns".
 */
export function isNameTaken(err: unknown): boolean {
  return err instanceof Error && /File exists|same name exists/.test(err.message);
}

/** True when `err` is a name clash on line `index` of a batch (and not on a later line). */
export function isNameTakenAt(err: unknown, index: number): boolean {
  return err instanceof NetError && err.failedLine === index && isNameTaken(err);
}

/** True when ip (or nsenter) could not enter the namespace because it is gone (or not a netns). */
export function isNoNetns(stderr: string): boolean {
  return /Cannot open network namespace|cannot open .*No such file|No such file or directory|Invalid argument/.test(
    stderr,
  );
}

/** True when iproute2 said the device is not there. */
export function isNoDevice(stderr: string): boolean {
  return /Cannot find device|does not exist|No such device/.test(stderr);
}
