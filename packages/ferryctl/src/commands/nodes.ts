import { NodesReportSchema } from '@ferry/shared-types/api/cluster';
import type { Context } from '../context';
import { table } from '../format';

/** `nodes`: the other nodes, their pod CIDRs and this node's routes and VXLAN entries for them. */
export async function cmdNodes(ctx: Context): Promise<number> {
  const [sub] = ctx.positionals;
  if (sub !== undefined && sub !== 'list') return ctx.usage(`unknown nodes subcommand "${sub}"`);
  const r = await ctx.client.call('GET', '/v1/operator/nodes', NodesReportSchema);
  if (ctx.json) return ctx.print(JSON.stringify(r, null, 2));
  ctx.print(
    `node ${r.nodeName ?? '(unnamed)'}: routing ${r.routing} (routes carry proto ${r.routeProtocol}); peers from ${r.source.kind}, last view ${r.source.lastSync ?? 'never'}, watch restarts ${r.source.watchRestarts}${r.source.lastError ? `, last error: ${r.source.lastError}` : ''}`,
  );
  ctx.print(
    `last sync ${r.sync.lastSync ?? 'never'} (${r.sync.syncs} syncs, ${r.sync.failures} failed, ${r.sync.lastChanges} changes in ${r.sync.lastDurationMs.toFixed(1)} ms)${r.sync.lastError ? `; last error: ${r.sync.lastError}` : ''}`,
  );
  if (r.egress) ctx.print(`egress: ${r.egress}`);
  if (r.vxlan) {
    ctx.print(
      `vxlan ${r.vxlan.device}: VNI ${r.vxlan.vni}, port ${r.vxlan.port}, MAC ${r.vxlan.mac}, local ${r.vxlan.local ?? '(not known yet)'}`,
    );
  }
  const rows = r.peers.flatMap((p) => {
    const entries = p.entries.length > 0 ? p.entries : [undefined];
    return entries.map((e, i) => [
      i === 0 ? p.name : '',
      i === 0 ? p.addresses.join(',') : '',
      i === 0 ? p.podCIDRs.join(',') : '',
      i === 0 ? p.state : '',
      e ? `${e.kind} ${e.key}${e.value ? ` → ${e.value}` : ''}` : '-',
      e ? `${e.state}${e.reason ? `: ${e.reason}` : ''}` : '-',
    ]);
  });
  ctx.print(`\n${table(['PEER', 'ADDRESSES', 'POD-CIDRS', 'STATE', 'ENTRY', 'ENTRY-STATE'], rows)}`);
  if (r.stale.length > 0) {
    ctx.print(
      `\nstale (no peer accounts for them):\n${table(
        ['KIND', 'KEY', 'VALUE'],
        r.stale.map((e) => [e.kind, e.key, e.value ?? '-']),
      )}`,
    );
  }
  return 0;
}
