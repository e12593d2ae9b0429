import { type Device, DeviceListSchema, DeviceSchema } from '@ferry/shared-types/api/devices';
import type { Context } from '../context';
import { shortId, table } from '../format';

/**
 * `devices` (the delegated-NIC inventory), `devices reserve DEVICE --namespace NS --pod POD [--ifname X]`,
 * `devices unreserve DEVICE` (DEVICE: a PCI address, or a MAC only one device has).
 */
export async function cmdDevices(ctx: Context): Promise<number> {
  const [sub, device] = ctx.positionals;
  if (sub === 'reserve' || sub === 'unreserve') {
    if (!device) return ctx.usage(`devices ${sub} needs a device, by its PCI address or MAC`);
    const path = `/v1/operator/devices/${encodeURIComponent(device)}/reservation`;
    let dev: Device;
    if (sub === 'reserve') {
      const { namespace, pod, ifname } = ctx.flags;
      if (typeof namespace !== 'string' || typeof pod !== 'string')
        return ctx.usage('devices reserve needs --namespace and --pod');
      dev = await ctx.client.call('PUT', path, DeviceSchema, {
        namespace,
        pod,
        ...(typeof ifname === 'string' ? { ifName: ifname } : {}),
      });
    } else {
      dev = await ctx.client.call('DELETE', path, DeviceSchema);
    }
    if (ctx.json) return ctx.print(JSON.stringify(dev, null, 2));
    return ctx.print(
      dev.reservation
        ? `${dev.id} reserved for ${dev.reservation.namespace}/${dev.reservation.pod}`
        : `${dev.id} not reserved`,
    );
  }
  if (sub !== undefined && sub !== 'list') return ctx.usage(`unknown devices subcommand "${sub}"`);
  const list = await ctx.client.call('GET', '/v1/operator/devices', DeviceListSchema);
  if (ctx.json) return ctx.print(JSON.stringify(list, null, 2));
  ctx.print(
    table(
      ['MAC', 'PCI-ADDRESS', 'GROUP', 'HOST-NAME', 'STATE', 'HELD-BY', 'RESERVED-FOR'],
      list.devices.map((d) => [
        d.mac ?? '-',
        d.pciAddress ?? '-',
        d.group,
        d.hostIfName ?? '-',
        d.state,
        d.assignedTo ? `${shortId(d.assignedTo.containerId)}/${d.assignedTo.ifName}` : '-',
        d.reservation ? `${d.reservation.namespace}/${d.reservation.pod}` : '-',
      ]),
    ),
  );
  return 0;
}
