import { HealthSchema, ReadinessSchema } from '@ferry/shared-types/api/status';
import type { Context } from '../context';
import { notServedBy } from '../ready-file';

/**
 * `health [--ready [--ready-file F]]`: exit 0 when ferryd is alive (or ready); what the DaemonSet's probes
 * run. With `--ready-file`, ready also means that the ferryd answering is this pod's own: the file its
 * ferryd writes while it serves names the socket now at the path (during a rollout with surge, both pods'
 * probes reach whichever ferryd serves the socket).
 */
export async function cmdHealth(ctx: Context): Promise<number> {
  if (!ctx.flags.ready) {
    await ctx.client.call('GET', '/healthz', HealthSchema);
    return ctx.print('alive');
  }
  await ctx.client.call('GET', '/readyz', ReadinessSchema);
  const readyFile = ctx.flags['ready-file'];
  if (typeof readyFile === 'string') {
    const notOwn = notServedBy(readyFile, ctx.socket);
    if (notOwn) {
      ctx.print(`not ready: ${notOwn}`);
      return 1;
    }
  }
  return ctx.print('ready');
}
