import { HealthSchema, ReadinessSchema } from '@ferry/shared-types/api/status';
import type { Context } from '../context';

/** `health [--ready]`: exit 0 when ferryd is alive (or ready); what the DaemonSet's probes run. */
export async function cmdHealth(ctx: Context): Promise<number> {
  if (ctx.flags.ready) await ctx.client.call('GET', '/readyz', ReadinessSchema);
  else await ctx.client.call('GET', '/healthz', HealthSchema);
  return ctx.print(ctx.flags.ready ? 'ready' : 'alive');
}
