/// <reference types="bun-types" />
/**
 * One plugin run as a runtime does it (fork + exec, CNI env, config on stdin), measured: wall time from
 * spawn to exit, the child's CPU time and peak RSS (Bun's resourceUsage of the exited child).
 */
export interface Op {
  exitCode: number;
  stdout: string;
  wallMs: number;
  cpuMs: number;
  maxRssKiB: number;
}

export async function exec(argv: string[], env: Record<string, string>, stdin: string): Promise<Op> {
  const t0 = performance.now();
  const p = Bun.spawn({ cmd: argv, env, stdin: new TextEncoder().encode(stdin), stdout: 'pipe', stderr: 'ignore' });
  const [stdout, exitCode] = await Promise.all([new Response(p.stdout).text(), p.exited]);
  const wallMs = performance.now() - t0;
  const ru = p.resourceUsage();
  const cpuUs = ru ? Number(ru.cpuTime.user + ru.cpuTime.system) : Number.NaN;
  return { exitCode, stdout, wallMs, cpuMs: cpuUs / 1000, maxRssKiB: ru ? Number(ru.maxRSS) : Number.NaN };
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
