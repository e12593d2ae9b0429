/**
 * STATUS (CNI 1.1): 0 when ferryd is ready and every pool of the network has a free address.
 * 50 (not available) when ferryd is unreachable or not ready, the network is unknown to it, or a pool
 * is exhausted. 51 (not available, existing pods degraded) when ferryd is fine but forwarding is off on
 * the node for a family the network serves: pods already here cannot reach beyond the node.
 */
import { FORWARDING, readSysctl } from '@ferry/net';
import type { Status } from '@ferry/shared-types/api/status';
import { CniError, Code } from '@ferry/shared-types/errors';
import type { ShimConf } from '../config';
import type { Deps } from '../deps';
import type { CmdArgs } from '../env';

export async function cmdStatus(_args: CmdArgs, conf: ShimConf, deps: Deps): Promise<undefined> {
  let status: Status;
  try {
    status = await deps.daemon.status(conf.name);
  } catch (err) {
    if (err instanceof CniError)
      throw new CniError(Code.NotAvailable, `network "${conf.name}" is not available: ${err.message}`);
    throw err;
  }
  if (!status.ready)
    throw new CniError(
      Code.NotAvailable,
      `network "${conf.name}" is not available: ${status.reason ?? 'ferryd is not ready'}`,
    );
  for (const p of status.pools) {
    if (p.free <= 0) {
      throw new CniError(
        Code.NotAvailable,
        `network "${conf.name}" is not available: IPv${p.family} pool ${p.subnet} is exhausted`,
      );
    }
  }
  for (const p of status.pools) {
    if (readSysctl(FORWARDING[p.family]) === '0') {
      throw new CniError(
        Code.LimitedConnectivity,
        `network "${conf.name}": IPv${p.family} forwarding is off on this node; existing pods cannot reach beyond it`,
      );
    }
  }
  return undefined;
}
