import { type PodReport, PodReportSchema, PodsReportSchema } from '@ferry/shared-types/api/pods';
import type { Context } from '../context';
import { table } from '../format';

/** `pods [list]`: this node's pods as ferryd's watch holds them; `pods show NS/NAME [--uid U]`: one, as an ADD finds it. */
export async function cmdPods(ctx: Context): Promise<number> {
  const [sub, which] = ctx.positionals;
  if (sub === 'show') {
    const [namespace, name, ...extra] = (which ?? '').split('/');
    if (!namespace || !name || extra.length > 0) return ctx.usage('pods show needs NAMESPACE/NAME');
    const uid = typeof ctx.flags.uid === 'string' ? `?uid=${encodeURIComponent(ctx.flags.uid)}` : '';
    const path = `/v1/operator/pods/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}${uid}`;
    const pod = await ctx.client.call('GET', path, PodReportSchema);
    if (ctx.json) return ctx.print(JSON.stringify(pod, null, 2));
    return ctx.print(table(HEADER, [rowOf(pod)]));
  }
  if (sub !== undefined && sub !== 'list') return ctx.usage(`unknown pods subcommand "${sub}"`);
  const r = await ctx.client.call('GET', '/v1/operator/pods', PodsReportSchema);
  if (ctx.json) return ctx.print(JSON.stringify(r, null, 2));
  const w = r.watch;
  ctx.print(
    `node ${r.nodeName}: pod watch ${w.synced ? 'synced' : 'not synced yet'}, last view ${w.lastSync ?? 'never'}, watch restarts ${w.watchRestarts}${w.lastError ? `, last error: ${w.lastError}` : ''}`,
  );
  const s = r.networkStatus;
  ctx.print(
    s
      ? `network-status: ${s.pending} pods waiting (oldest ${s.oldestPendingSec.toFixed(1)} s); ${s.written} written, ${s.conflicts} conflicts, ${s.failed} failed, ${s.gone} gone`
      : 'network-status: not written by ferryd (networkStatus is off)',
  );
  return ctx.print(`\n${table(HEADER, r.pods.map(rowOf))}`);
}

const HEADER = ['POD', 'UID', 'SOURCE', 'FERRY.DEV/NICS', 'LAST REFUSED ADD'];

function rowOf(p: PodReport): string[] {
  const nics = p.problem ?? (p.nics ? JSON.stringify(p.nics) : '-');
  const refused = p.refused ? `${p.refused.at} ${p.refused.reason} (${p.refused.code}): ${p.refused.msg}` : '-';
  return [`${p.namespace}/${p.name}`, p.uid, p.source, nics, refused];
}
