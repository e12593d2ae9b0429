/** How long to wait between attempts at a source that is away: doubling from initialMs, never above maxMs. */
export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
}

/** client-go's reflector waits 800 ms doubling to 30 s; starting lower heals a brief API blip sooner. */
export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 500, maxMs: 30_000 };

/**
 * The wait before retry number `failures` (1 = the first retry). The ±20 % jitter keeps a fleet of nodes
 * restarted together (an API server upgrade) from retrying in lockstep; the result never exceeds maxMs.
 */
export function backoffDelayMs(failures: number, opts: BackoffOptions, random: () => number = Math.random): number {
  const exponent = Math.min(Math.max(0, failures - 1), 30);
  const base = Math.min(opts.maxMs, opts.initialMs * 2 ** exponent);
  return Math.round(Math.min(opts.maxMs, base * (0.8 + 0.4 * random())));
}
