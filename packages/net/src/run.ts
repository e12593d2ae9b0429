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

/** An iproute2 command failed. Code NetlinkFailure; the message carries the command's own error. */
export class NetError extends CniError {
  readonly argv: readonly string[];
  readonly stderr: string;
  constructor(action: string, result: RunResult, argv: readonly string[]) {
    const why = result.stderr.trim().split('\n').filter(Boolean).slice(-2).join('; ') || `exit code ${result.exitCode}`;
    super(Code.NetlinkFailure, `${action}: ${why}`);
    this.name = 'NetError';
    this.argv = argv;
    this.stderr = result.stderr;
  }
}

/**
 * True when an error says a name is taken: "File exists", or with the kernel's extended acks "An
 * interface with the same name exists in the target netns".
 */
export function isNameTaken(err: unknown): boolean {
  return err instanceof Error && /File exists|same name exists/.test(err.message);
}

/** True when iproute2 said the device is not there. */
export function isNoDevice(stderr: string): boolean {
  return /Cannot find device|does not exist|No such device/.test(stderr);
}
