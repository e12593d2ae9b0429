/**
 * DEL: tear down each NIC → release. The InfraNIC's host veth, whose name the attachment gives, goes
 * first; then one request releases an attachment that had nothing else (the usual pod), or answers the
 * record of one that has (DelegatedNICs), which is torn down and released as a second request.
 * Idempotent: no state, an empty or vanished CNI_NETNS, a second DEL all end in exit 0. The InfraNIC is
 * torn down from the node side, so a vanished netns never stops the release. A delegated device whose
 * host name is taken fails the DEL before anything is released, so the retried DEL still knows where the
 * device is.
 *
 * ferryd not running (its socket absent, or refusing connections): the DEL is queued at once (fallback/)
 * and exits 0. ferryd drains the queue before it serves, so waiting for it would only hold up the pod's
 * teardown. ferryd running but not answering (frozen, overloaded): asked again for `delWaitMs` in all,
 * then queued the same way.
 * ferryd up but unable to store the release (its disk is full or read-only): queued the same way; when
 * the queue cannot be written either, code 11 naming both, so the runtime retries.
 */
import { netnsAt, SELF } from '@ferry/net';
import type { ReleaseResult } from '@ferry/shared-types/api/endpoints';
import { CniError, Code } from '@ferry/shared-types/errors';
import { hostVethNameOf } from '@ferry/shared-types/host-veth';
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
  // The InfraNIC's host veth is named after the attachment, so it goes before ferryd is asked anything
  // (its pod end and host routes go with it). The usual attachment, that veth alone, is then released by
  // the same request that would otherwise have fetched its record.
  const deleted = await deleteHostVeth(hostVethNameOf(d.rt.sha256Hex, conf.name, args.containerId, args.ifName), d);
  const { released, toTearDown } = await releaseOrRecord(args, conf, d, deadline, deleted);
  if (!toTearDown) {
    d.log.info({ interfaces: released.length }, 'deleted');
    return;
  }
  // DelegatedNICs go home before the release, so a DEL retried after a failure still knows where they are.
  const delegated = toTearDown.filter((nic) => nic.nicType === 'DelegatedNIC');
  const podLinks = delegated.length > 0 && args.netns ? await d.ip.linksIfPresent(netnsAt(args.netns)) : undefined;
  for (const nic of delegated) await teardownDelegatedNic(nic, args.netns, podLinks, d);
  // An InfraNIC recorded under another name (by an older ferryd) still has its veth to delete.
  for (const nic of toTearDown) {
    if (nic.nicType === 'InfraNIC' && nic.hostVethName !== deleted) await teardownInfraNic(nic, d);
  }
  await d.daemon.release(args.containerId, conf.name, args.ifName);
  d.log.info({ interfaces: toTearDown.length }, 'deleted');
}

/**
 * The first request: releases the attachment if `hostVethDeleted` was all it had, else says what is
 * left to tear down. Without `hostVethDeleted` (its delete failed) it only fetches the record, so that
 * the teardown by the record fails the DEL before anything is released.
 */
async function releaseOrRecord(
  args: CmdArgs,
  conf: ShimConf,
  d: Deps,
  deadline: number,
  hostVethDeleted: string | undefined,
): Promise<ReleaseResult> {
  const { containerId, ifName } = args;
  if (hostVethDeleted === undefined) {
    const ep = await askWithin(deadline, d, (ms) => d.daemon.getEndpoint(containerId, ms).answer());
    return { released: [], toTearDown: interfacesOf(ep, conf.name, ifName) };
  }
  try {
    return await askWithin(deadline, d, (ms) =>
      d.daemon.releaseIfOnly(containerId, conf.name, ifName, hostVethDeleted, ms),
    );
  } catch (err) {
    if (!isOlderFerryd(err)) throw err;
    // A ferryd older than this shim (an upgrade with both running) refuses the parameter: the record, then.
    d.log.info({ cause: (err as CniError).message }, 'ferryd does not know hostVethDeleted; asking for the record');
    return releaseOrRecord(args, conf, d, deadline, undefined);
  }
}

/** An older ferryd's answer to the query parameter it does not know (its strict query schema). */
const isOlderFerryd = (err: unknown): boolean =>
  err instanceof CniError && err.code === Code.InvalidConfig && err.message.includes('hostVethDeleted');

/** Deletes the host veth (absent counts as done) and returns its name; undefined (logged) when that failed. */
async function deleteHostVeth(hostVethName: string, d: Deps): Promise<string | undefined> {
  try {
    const result = await d.ip.deleteLink(SELF, hostVethName);
    d.log.info({ hostVethName, result }, 'host veth deleted');
    return hostVethName;
  } catch (err) {
    d.log.warn({ err, hostVethName }, 'could not delete the host veth; asking ferryd for the record');
    return undefined;
  }
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
 * One request to ferryd (`call` gets the milliseconds left), asked again every 200 ms while ferryd is
 * running but does not answer, until `deadline`. A ferryd that is not running is not asked again. Both
 * requests a DEL starts with may be repeated: a release is idempotent, a read changes nothing.
 */
async function askWithin<T>(deadline: number, d: Deps, call: (leftMs: number) => Promise<T>): Promise<T> {
  for (;;) {
    const left = deadline - Date.now();
    try {
      return await call(Math.max(1, left));
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
