import { BlocksReportSchema } from '@ferry/shared-types/api/blocks';
import type { Context } from '../context';
import { table } from '../format';

/** `blocks`: this node's blocks of each cluster-IPAM range, and the cluster's use of each range. */
export async function cmdBlocks(ctx: Context): Promise<number> {
  const [sub] = ctx.positionals;
  if (sub !== undefined && sub !== 'list') return ctx.usage(`unknown blocks subcommand "${sub}"`);
  const r = await ctx.client.call('GET', '/v1/operator/blocks', BlocksReportSchema);
  if (ctx.json) return ctx.print(JSON.stringify(r, null, 2));
  if (!r.isEnabled) return ctx.print('no network pool is a range split into blocks (cluster IPAM is off)');
  ctx.print(
    table(
      ['NETWORK', 'FAMILY', 'RANGE', 'BLOCK', 'HELD', 'FREE', 'PENDING', 'CLUSTER', 'STATE'],
      r.ranges.map((g) => [
        g.network,
        `IPv${g.family}`,
        g.range,
        `/${g.prefixLength}`,
        String(g.blocks.filter((b) => b.state === 'held').length),
        String(g.free),
        String(g.pending),
        `${g.cluster.blocksHeld}/${g.cluster.blocksTotal} blocks, ${g.cluster.nodes} nodes`,
        [
          g.isRangeExhausted ? 'range exhausted' : 'ok',
          ...(g.claiming > 0 ? [`claiming ${g.claiming}`] : []),
          ...(g.lastError ? [`last error: ${g.lastError}`] : []),
        ].join('; '),
      ]),
    ),
  );
  const rows = r.ranges.flatMap((g) =>
    g.blocks.map((b) => [
      g.network,
      b.cidr,
      b.state,
      `${b.used}/${b.allocatable}`,
      b.emptySince ? `empty since ${b.emptySince}` : '',
    ]),
  );
  if (rows.length > 0) ctx.print(`\n${table(['NETWORK', 'BLOCK', 'STATE', 'USED', ''], rows)}`);
  const conflicts = r.ranges.flatMap((g) => g.conflicts);
  if (conflicts.length > 0) ctx.print(`\nconflicts:\n${conflicts.map((c) => `  ${c}`).join('\n')}`);
  return conflicts.length > 0 ? 1 : 0;
}
