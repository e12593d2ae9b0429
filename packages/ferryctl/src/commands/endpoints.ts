import { EndpointSchema, ReleaseResultSchema } from '@ferry/shared-types/api/endpoints';
import { EndpointListSchema } from '@ferry/shared-types/api/operator';
import type { Context } from '../context';
import { shortId, table } from '../format';

/** `endpoints [--namespace] [--pod] [--network] [--nic-type]`, `endpoints show ID`, `endpoints delete ID`. */
export async function cmdEndpoints(ctx: Context): Promise<number> {
  const [sub, id] = ctx.positionals;
  if (sub === 'show' || sub === 'delete') {
    if (!id) return ctx.usage(`endpoints ${sub} needs a container ID`);
    const ep =
      sub === 'show'
        ? await ctx.client.call('GET', `/v1/operator/endpoints/${encodeURIComponent(id)}`, EndpointSchema)
        : await ctx.client.call('DELETE', `/v1/operator/endpoints/${encodeURIComponent(id)}`, ReleaseResultSchema);
    if (ctx.json) return ctx.print(JSON.stringify(ep, null, 2));
    const interfaces = 'interfaces' in ep ? ep.interfaces : ep.released;
    if (sub === 'delete') ctx.print(`released ${interfaces.length} interfaces of ${id}`);
    ctx.print(
      table(
        ['IFNAME', 'NIC', 'ENDPOINT-ID', 'NETWORK', 'ADDRESSES', 'MAC', 'HOST-SIDE', 'NETNS'],
        interfaces.map((i) => [
          i.ifName,
          i.nicType,
          i.endpointId,
          i.network,
          i.addresses.map((a) => a.address).join(','),
          i.mac ?? '-',
          i.hostVethName ?? i.hostIfName ?? '-',
          i.netns,
        ]),
      ),
    );
    return 0;
  }
  if (sub !== undefined && sub !== 'list') return ctx.usage(`unknown endpoints subcommand "${sub}"`);
  const q = new URLSearchParams();
  for (const [flag, key] of [
    ['namespace', 'namespace'],
    ['pod', 'pod'],
    ['network', 'network'],
    ['nic-type', 'nicType'],
  ] as const) {
    const v = ctx.flags[flag];
    if (typeof v === 'string') q.set(key, v);
  }
  const list = await ctx.client.call('GET', `/v1/operator/endpoints${q.size ? `?${q}` : ''}`, EndpointListSchema);
  if (ctx.json) return ctx.print(JSON.stringify(list, null, 2));
  ctx.print(
    table(
      ['CONTAINER', 'POD', 'IFNAME', 'NIC', 'ADDRESSES', 'STATE', 'NETWORK'],
      list.endpoints.flatMap((e) =>
        e.interfaces.map((i) => [
          shortId(e.containerId),
          i.pod.namespace && i.pod.name ? `${i.pod.namespace}/${i.pod.name}` : '-',
          i.ifName,
          i.nicType,
          i.addresses.map((a) => a.address).join(',') || '-',
          // Rebuilt from the node after the database lost it (docs/runbook.md, "Lost, corrupt or restored database").
          i.adoptedAt ? `${i.state}, adopted` : i.state,
          i.network,
        ]),
      ),
    ),
  );
  return 0;
}
