import { AddressListSchema, PoolListSchema } from '@ferry/shared-types/api/operator';
import type { Context } from '../context';
import { shortId, table } from '../format';

/** `ipam` (pools: size, used, free, cooldown) and `ipam addresses [--network] [--state]`. */
export async function cmdIpam(ctx: Context): Promise<number> {
  const [sub] = ctx.positionals;
  if (sub === 'addresses') {
    const q = new URLSearchParams();
    if (typeof ctx.flags.network === 'string') q.set('network', ctx.flags.network);
    if (typeof ctx.flags.state === 'string') q.set('state', ctx.flags.state);
    const list = await ctx.client.call('GET', `/v1/operator/addresses${q.size ? `?${q}` : ''}`, AddressListSchema);
    if (ctx.json) return ctx.print(JSON.stringify(list, null, 2));
    ctx.print(
      table(
        ['ADDRESS', 'STATE', 'CONTAINER', 'IFNAME', 'SINCE', 'AVAILABLE-AT'],
        list.addresses.map((a) => [
          a.address,
          a.state,
          a.containerId ? shortId(a.containerId) : '-',
          a.ifName ?? '-',
          a.since,
          a.availableAt ?? '-',
        ]),
      ),
    );
    return 0;
  }
  if (sub !== undefined && sub !== 'pools') return ctx.usage(`unknown ipam subcommand "${sub}"`);
  const pools = await ctx.client.call('GET', '/v1/operator/pools', PoolListSchema);
  if (ctx.json) return ctx.print(JSON.stringify(pools, null, 2));
  ctx.print(
    table(
      ['NETWORK', 'FAMILY', 'SUBNET', 'SIZE', 'ASSIGNED', 'COOLING', 'FREE', 'COOLDOWN'],
      pools.pools.map((p) => [
        p.network,
        `IPv${p.family}`,
        p.subnet,
        p.size,
        String(p.assigned),
        String(p.pendingRelease),
        p.free,
        `${p.cooldownSec}s`,
      ]),
    ),
  );
  return 0;
}
