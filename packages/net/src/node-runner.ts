import { execa } from 'execa';
import { RUN_TIMEOUT_MS, type Runner, timedOut } from './run';

/**
 * The Runner for Node processes (ferryd, ferryctl, tests running sources): execa without a shell,
 * never throwing on a non-zero exit, so callers read the exit code and stderr themselves.
 */
export const nodeRunner: Runner = async (argv, input) => {
  const [file, ...args] = argv;
  if (!file) throw new Error('nodeRunner: empty argv');
  const r = await execa(file, args, {
    input: input ?? '',
    reject: false,
    stripFinalNewline: false,
    timeout: RUN_TIMEOUT_MS,
    killSignal: 'SIGKILL',
  });
  if (r.timedOut) return timedOut(r.stdout, r.stderr);
  return { exitCode: r.exitCode ?? 1, stdout: r.stdout, stderr: r.stderr };
};
