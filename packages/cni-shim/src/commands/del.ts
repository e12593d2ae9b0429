/**
 * DEL: get state → tear down each NIC → release. Idempotent: no state, an empty or vanished CNI_NETNS,
 * a second DEL all end in exit 0. The InfraNIC is torn down from the node side (its host veth), so a
 * vanished netns never stops the release. A delegated device whose host name is taken fails the DEL
 * before anything is released, so the retried DEL still knows where the device is.
 *
 * ferryd not running (its socket absent, or refusing connections): the DEL is queued at once (fallback/)
 * and exits 0. ferryd drains the queue before it serves, so waiting for it would only hold up the pod's
 * teardown. ferryd running but not answering (frozen, overloaded): asked again for `delWaitMs` in all,
 * then queued the same way.
 * ferryd up but unable to store the release (its disk is full or read-only): queued the same way; when
 * the queue cannot be written either, code 11 naming both, so the runtime retries.
 */
import { netnsAt } from '@ferry/net';
import type { Endpoint } from '@ferry/shared-types/api/endpoints';
import { CniError, Code } from '@ferry/shared-types/errors';
import type { ShimConf } from '../config';
import { isDaemonDown, isNotListening } from '../daemon-client';
import type { Deps } from '../deps';
import type { CmdArgs } from '../env';
import { teardownDelegatedNic } from '../nic/delegated';
import { teardownInfraNic } from '../nic/infra';
import { interfacesOf } from './attachment';

export async function cmdDel(args: CmdArgs, conf: ShimConf, d: Deps): Promise<undefined> {
  try {
    await delOnline(args, conf, d, Date.now() + d.delWaitMs);
  } catch (err) {
    // StorageFailure: ferryd answered but could not write the release (disk full, read-only, I/O error).
    if (!(err instanceof CniError) || (err.code !== Code.StorageFailure && !isDaemonDown(err))) throw err;
    // Loaded only now: the queue's schemas and file code are no part of a DEL that reaches ferryd.
    const { delWithoutDaemon } = await import('../fallback/del-offline');
    let path: Awaited<ReturnType<typeof delWithoutDaemon>>;
    try {
      path = await delWithoutDaemon(args, conf, d, err);
    } catch (fallbackErr) {
      throw withCause(fallbackErr, err);
    }
    if (path === 'online') await delOnline(args, conf, d, Date.now() + d.delWaitMs);
  }
  return undefined;
}

async function delOnline(args: CmdArgs, conf: ShimConf, d: Deps, deadline: number): Promise<void> {
  const mine = interfacesOf(await getWithin(args.containerId, deadline, d), conf.name, args.ifName);
  // Delegated devices first: they need the pod netns, which the InfraNIC's veth does not.
  const delegated = mine.filter((nic) => nic.nicType === 'DelegatedNIC');
  const podLinks = delegated.length > 0 && args.netns ? await d.ip.linksIfPresent(netnsAt(args.netns)) : undefined;
  for (const nic of delegated) await teardownDelegatedNic(nic, args.netns, podLinks, d);
  for (const nic of mine) if (nic.nicType === 'InfraNIC') await teardownInfraNic(nic, d);
  await d.daemon.release(args.containerId, conf.name, args.ifName);
  d.log.info({ interfaces: mine.length }, 'deleted');
}

/** The fallback's own error, saying also why the fallback was needed. */
function withCause(err: unknown, unreachable: CniError): unknown {
  if (unreachable.code === Code.StorageFailure) {
    // Neither ferryd nor the queue can keep this DEL: transient for the runtime, which retries it.
    const queueing = err instanceof Error ? err.message : String(err);
    return new CniError(
      Code.TryAgainLater,
      `${unreachable.message}; and the DEL could not be queued either: ${queueing}`,
      unreachable.details,
      { cause: err },
    );
  }
  if (!(err instanceof CniError)) return err;
  const why = `ferryd was unreachable: ${unreachable.message}`;
  return new CniError(err.code, err.message, err.details ? `${err.details}; ${why}` : why, { cause: err });
}

/**
 * The endpoint, asking again every 200 ms while ferryd is running but does not answer, until `deadline`.
 * A ferryd that is not running is not asked again.
 */
async function getWithin(containerId: string, deadline: number, d: Deps): Promise<Endpoint | undefined> {
  for (;;) {
    const left = deadline - Date.now();
    try {
      return await d.daemon.getEndpoint(containerId, Math.max(1, left));
    } catch (err) {
      if (isNotListening(err)) {
        d.log.info({ cause: err.message }, 'ferryd is not running: queueing the DEL without waiting');
        throw err;
      }
      if (!isDaemonDown(err) || Date.now() + 200 >= deadline) throw err;
      d.log.info({ err: err.message, leftMs: left }, 'ferryd unreachable; trying again');
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}
