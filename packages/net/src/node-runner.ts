import { execa } from 'execa';
import type { Runner } from './run';

/**
 * The Runner for Node processes (ferryd, ferryctl, tests running sources): execa without a shell,
 * never throwing on a non-zero exit, so callers read the exit code and stderr themselves.
 */
export const nodeRunner: Runner = async (argv, input) => {
  const [file, ...args] = argv;
  if (!file) throw new Error('nodeRunner: empty argv');
  const r = await execa(file, args, { input: input ?? '', reject: false, stripFinalNewline: false, timeout: 30_000 });
  return { exitCode: r.exitCode ?? 1, stdout: r.stdout, stderr: r.stderr };
};
