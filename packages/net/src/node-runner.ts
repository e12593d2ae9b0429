import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { type Child, RUN_TIMEOUT_MS, type Runner, type Spawner, timedOut } from './run';

// node:child_process, not execa: ferryd uses none of execa's conveniences (no shell, no streaming
// transforms, stdio as pipes), and loading execa's module graph took ~40 ms of every ferryd start's CPU.

/**
 * The Runner for Node processes (ferryd, tests running sources): no shell, never throwing on a non-zero
 * exit, so callers read the exit code and stderr themselves. A command that cannot start (no such file)
 * exits 127 with the reason on stderr, as a shell would say it.
 */
export const nodeRunner: Runner = (argv, input) =>
  new Promise((resolve) => {
    const [file, ...args] = argv;
    if (!file) throw new Error('nodeRunner: empty argv');
    // No input, no pipe: a child that never reads one (most) would leave a write to fail with EPIPE.
    const stdin = input === undefined ? 'ignore' : 'pipe';
    const child = spawn(file, args, { stdio: [stdin, 'pipe', 'pipe'] }) as ChildProcessByStdio<
      Writable | null,
      Readable,
      Readable
    >;
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => stdout.push(c));
    child.stderr.on('data', (c: Buffer) => stderr.push(c));
    let killed = false;
    const timer = setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, RUN_TIMEOUT_MS);
    let done = false;
    const finish = (exitCode: number, why?: string) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      const out = Buffer.concat(stdout).toString('utf8');
      const err = Buffer.concat(stderr).toString('utf8') + (why ?? '');
      resolve(killed ? timedOut(out, err) : { exitCode, stdout: out, stderr: err });
    };
    child.once('error', (e) => finish(127, `${file}: ${e.message}`));
    child.once('close', (code) => finish(code ?? 1));
    // A child that exits without reading its input closes the pipe: not a failure of the run.
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(input);
  });

/**
 * The Spawner for Node processes (ferryd's link monitor). The child runs under `setpriv --pdeathsig KILL`
 * (util-linux, in the image): the kernel kills it when this process dies, also by SIGKILL, when no code of
 * ours runs. Without it a monitor would outlive ferryd until its next write met the closed pipe, and a
 * quiet node's could live on for days.
 */
export const nodeSpawner: Spawner = (argv, onLine): Child => {
  if (argv.length === 0) throw new Error('nodeSpawner: empty argv');
  const child = spawn('setpriv', ['--pdeathsig', 'KILL', '--', ...argv], { stdio: ['ignore', 'pipe', 'pipe'] });
  const stderr: Buffer[] = [];
  child.stderr.on('data', (c: Buffer) => stderr.push(c));
  createInterface({ input: child.stdout }).on('line', onLine);
  const exited = new Promise<{ exitCode: number | null; signal: string | null; stderr: string }>((resolve) => {
    // Without its final newline: it goes into a log line.
    const text = () => Buffer.concat(stderr).toString('utf8').replace(/\n$/, '');
    child.once('error', (e) => resolve({ exitCode: null, signal: null, stderr: `setpriv: ${e.message}` }));
    child.once('close', (exitCode, signal) => resolve({ exitCode, signal, stderr: text() }));
  });
  return {
    pid: child.pid,
    exited,
    kill: () => void child.kill('SIGTERM'),
  };
};
