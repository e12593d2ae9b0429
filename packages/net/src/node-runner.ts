import { createInterface } from 'node:readline';
import { execa } from 'execa';
import { type Child, RUN_TIMEOUT_MS, type Runner, type Spawner, timedOut } from './run';

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

/**
 * The Spawner for Node processes (ferryd's link monitor). The child runs under `setpriv --pdeathsig KILL`
 * (util-linux, in the image): the kernel kills it when this process dies, also by SIGKILL, when no code of
 * ours runs. Without it a monitor would outlive ferryd until its next write met the closed pipe, and a
 * quiet node's could live on for days.
 */
export const nodeSpawner: Spawner = (argv, onLine): Child => {
  if (argv.length === 0) throw new Error('nodeSpawner: empty argv');
  const child = execa('setpriv', ['--pdeathsig', 'KILL', '--', ...argv], {
    // No exit hook (execa's signal-exit): pdeathsig ends the child, also when no code of ours runs.
    cleanup: false,
    stdin: 'ignore',
    buffer: { stdout: false, stderr: true },
    reject: false,
  });
  createInterface({ input: child.stdout }).on('line', onLine);
  return {
    pid: child.pid,
    exited: child.then((r) => ({ exitCode: r.exitCode ?? null, signal: r.signal ?? null, stderr: r.stderr })),
    kill: () => void child.kill('SIGTERM'),
  };
};
