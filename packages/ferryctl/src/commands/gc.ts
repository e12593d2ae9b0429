import { OperatorGcResultSchema } from '@ferry/shared-types/api/operator';
import type { Context } from '../context';
import { shortId, table } from '../format';

/**
 * `gc [--network NET] [--keep ID,ID…] [--apply]`: endpoints whose netns is gone (or whose container is
 * not in --keep). A dry run that lists them unless --apply.
 */
export async function cmdGc(ctx: Context): Promise<number> {
  const { network, keep, apply } = ctx.flags;
  const body = {
    ...(typeof network === 'string' ? { network } : {}),
    ...(typeof keep === 'string' ? { keep: keep.split(',').filter(Boolean) } : {}),
    apply: apply === true,
  };
  const r = await ctx.client.call('POST', '/v1/operator/gc', OperatorGcResultSchema, body);
  if (ctx.json) return ctx.print(JSON.stringify(r, null, 2));
  if (r.candidates.length === 0) return ctx.print('nothing to collect');
  ctx.print(
    table(
      ['CONTAINER', 'IFNAME', 'NETWORK', 'REASON', 'NETNS'],
      r.candidates.map((c) => [shortId(c.containerId), c.ifName, c.network, c.reason, c.netns]),
    ),
  );
  return ctx.print(
    r.applied
      ? `\nreleased ${r.candidates.length}`
      : `\ndry run: ${r.candidates.length} would be released; run again with --apply`,
  );
}
