/// <reference types="bun-types" />
import { readFileSync } from 'node:fs';
/**
 * One plugin run as a runtime does it (fork + exec, CNI env, config on stdin), measured: wall time from
 * spawn to exit and the CPU time of the child and the processes it waited for (Bun's resourceUsage).
 */
export interface Op {
  exitCode: number;
  stdout: string;
  wallMs: number;
  cpuMs: number;
}

export async function exec(argv: string[], env: Record<string, string>, stdin: string): Promise<Op> {
  const t0 = performance.now();
  const p = Bun.spawn({ cmd: argv, env, stdin: new TextEncoder().encode(stdin), stdout: 'pipe', stderr: 'ignore' });
  const [stdout, exitCode] = await Promise.all([new Response(p.stdout).text(), p.exited]);
  const wallMs = performance.now() - t0;
  const ru = p.resourceUsage();
  const cpuUs = ru ? Number(ru.cpuTime.user + ru.cpuTime.system) : Number.NaN;
  return { exitCode, stdout, wallMs, cpuMs: cpuUs / 1000 };
}

/**
 * Peak RSS of one run, in KiB, from GNU time (Debian package `time`): the kernel's ru_maxrss of exactly
 * that process. Measured in runs of their own, because the extra exec would skew the timings.
 */
export async function peakRssKiB(argv: string[], env: Record<string, string>, stdin: string): Promise<number> {
  const p = Bun.spawn({
    cmd: ['/usr/bin/time', '-f', '%M', ...argv],
    env,
    stdin: new TextEncoder().encode(stdin),
    stdout: 'ignore',
    stderr: 'pipe',
  });
  const [err] = await Promise.all([new Response(p.stderr).text(), p.exited]);
  return Number(err.trim().split('\n').at(-1));
}

/** A plugin run's environment as a runtime sets it; `cniArgs` is CNI_ARGS (the kubelet's K8S_POD_*). */
export function cniEnv(
  command: string,
  netns: string,
  id: string,
  ifName: string,
  cniPath: string,
  cniArgs?: string,
): Record<string, string> {
  return {
    PATH: '/usr/sbin:/usr/bin:/sbin:/bin',
    CNI_COMMAND: command,
    CNI_CONTAINERID: id,
    CNI_NETNS: netns,
    CNI_IFNAME: ifName,
    CNI_PATH: cniPath,
    ...(cniArgs ? { CNI_ARGS: cniArgs } : {}),
  };
}

export function sh(argv: string[]): string {
  const p = Bun.spawnSync({ cmd: argv, stdout: 'pipe', stderr: 'pipe' });
  if (p.exitCode !== 0) throw new Error(`${argv.join(' ')}: ${p.stderr.toString()}`);
  return p.stdout.toString();
}

/** Runs `fn` over `items` with at most `limit` at a time. */
export async function pool<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i] as T);
    }
  });
  await Promise.all(workers);
  return out;
}

/** Clock ticks per second, the unit of /proc/PID/stat's CPU times. */
const CLK_TCK = Number(sh(['getconf', 'CLK_TCK']).trim()) || 100;

/**
 * CPU a process has used so far, in ms: utime + stime of all its threads, plus cutime + cstime of the
 * children it has waited for (the `ip` runs of its reconcilers), from /proc/PID/stat (clock ticks).
 */
export function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name, which is in parentheses and may contain spaces.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(f[i]), 0);
  return (ticks * 1000) / CLK_TCK;
}
