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

/** How a long-running child ended. */
export interface ChildExit {
  /** Null when a signal ended it, or it never started. */
  exitCode: number | null;
  signal: string | null;
  /** What it wrote on stderr (why it could not start or stopped). */
  stderr: string;
}

/** A long-running child process started by a Spawner. */
export interface Child {
  readonly pid: number | undefined;
  /** Resolves once it has exited, however it ended (never rejects). */
  readonly exited: Promise<ChildExit>;
  /** SIGTERM; `exited` resolves once it is gone. */
  kill(): void;
}

/**
 * Starts argv[0] with argv[1..] (never through a shell) and calls `onLine` with each line of its stdout
 * as it comes. The child dies with this process, however this process ends.
 */
export type Spawner = (argv: readonly string[], onLine: (line: string) => void) => Child;
