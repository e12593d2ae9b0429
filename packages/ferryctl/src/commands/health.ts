import * as z from 'zod/mini';
import type { Context } from '../context';

const HealthSchema = z.looseObject({});

/** `health [--ready]`: exit 0 when ferryd is alive (or ready); what the DaemonSet's probes run. */
export async function cmdHealth(ctx: Context): Promise<number> {
  const path = ctx.flags.ready ? '/readyz' : '/healthz';
  await ctx.client.call('GET', path, HealthSchema);
  return ctx.print(ctx.flags.ready ? 'ready' : 'alive');
}
