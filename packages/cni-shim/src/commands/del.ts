/**
 * DEL (docs/architecture.md "DEL (ferryd up)"): delete the InfraNIC's host veth → release if that was all → tear
 * down what is left by ferryd's record → release. The host veth is named after the attachment, so it
 * goes before ferryd is asked anything, and the usual attachment (that veth alone) is released by the
 * same request that would otherwise have fetched its record; an attachment with DelegatedNICs needs a
 * second request, after they went home. Idempotent: no state, an empty or vanished CNI_NETNS, a second
 * DEL all end in exit 0. The InfraNIC is torn down from the node side, so a vanished netns never stops
 * the release. A delegated device whose host name is taken fails the DEL before anything is released,
 * so the retried DEL still knows where the device is.
 *
 * ferryd not running (its socket absent, or refusing connections): the DEL is queued at once (fallback/)
 * and exits 0. ferryd drains the queue before it serves, so waiting for it would only hold up the pod's
 * teardown. ferryd running but not answering (frozen, overloaded): asked again for `delWaitMs` in all,
 * then queued the same way.
 * ferryd up but unable to store the release (its disk is full or read-only): queued the same way; when
 * the queue cannot be written either, code 11 naming both, so the runtime retries.
 */
import { netnsAt, SELF } from '@ferry/net';
import type { InterfaceRecord, ReleaseResult } from '@ferry/shared-types/api/endpoints';
import { CniError, Code } from '@ferry/shared-types/errors';
import { hostVethNameOf } from '@ferry/shared-types/host-veth';
import type { ShimConf } from '../config';
import { isDaemonDown, isNotListening } from '../daemon-client';
import type { Deps } from '../deps';
import { type CmdArgs, isOwnNetns } from '../env';
import { teardownDelegatedNic } from '../nic/delegated';
import { teardownInfraNic } from '../nic/infra';
import { interfacesOf } from './attachment';

export async function cmdDel(args: CmdArgs, conf: ShimConf, deps: Deps): Promise<undefined> {
  const del = withoutNodeNetns(args, deps);
  try {
    await delThroughFerryd(del, conf, deps);
  } catch (err) {
    // StorageFailure: ferryd answered but could not write the release (disk full, read-only, I/O error).
    if (!(err instanceof CniError) || (err.code !== Code.StorageFailure && !isDaemonDown(err))) throw err;
    await delWithoutFerryd(del, conf, deps, err);
  }
  return undefined;
}

/**
 * The DEL's arguments, with a CNI_NETNS that is the node's own namespace taken as gone: the release still
 * happens (a pod must never stay Terminating), but nothing in the node's namespace is touched as if it
 * were the pod's.
 */
function withoutNodeNetns(args: CmdArgs, deps: Deps): CmdArgs {
  if (!args.netns || !isOwnNetns(args.netns)) return args;
  deps.log.warn({}, "CNI_NETNS is the node's own network namespace: releasing without touching it");
  return { ...args, netns: '' };
}

async function delThroughFerryd(args: CmdArgs, conf: ShimConf, deps: Deps): Promise<void> {
  const hostVethName = hostVethNameOf(deps.runtime.sha256Hex, conf.name, args.containerId, args.ifName);
  const isHostVethGone = await deleteHostVeth(hostVethName, deps);
  // The wait is for ferryd's answer: it starts at the first question, so a slow veth delete on a loaded
  // node does not leave the first request 1 ms to be answered in.
  const deadline = Date.now() + deps.delWaitMs;
  const first = await releaseIfOnlyOrRecord(args, conf, deps, deadline, isHostVethGone);
  if (!first.toTearDown) {
    deps.log.info({ interfaces: first.released.length }, 'deleted');
    return;
  }
  await tearDownByRecord(first.toTearDown, args.netns, isHostVethGone, deps);
  await deps.daemon.release(args.containerId, conf.name, args.ifName);
  deps.log.info({ interfaces: first.toTearDown.length }, 'deleted');
}

/** Deletes the host veth (absent counts as done); false (logged) when that failed. */
async function deleteHostVeth(hostVethName: string, deps: Deps): Promise<boolean> {
  try {
    const result = await deps.ip.deleteLink(SELF, hostVethName);
    deps.log.info({ hostVethName, result }, 'host veth deleted');
    return true;
  } catch (err) {
    deps.log.warn({ err, hostVethName }, 'could not delete the host veth; asking ferryd for the record');
    return false;
  }
}

/**
 * The first request. With the host veth gone: releases the attachment if that was all it had, else says
 * what is left to tear down. Without (its delete failed): only the record, so that the teardown by the
 * record fails the DEL before anything is released.
 */
async function releaseIfOnlyOrRecord(
  args: CmdArgs,
  conf: ShimConf,
  deps: Deps,
  deadline: number,
  isHostVethGone: boolean,
): Promise<ReleaseResult> {
  const { containerId, ifName } = args;
  if (isHostVethGone) {
    return askWithin(deadline, deps, (ms) => deps.daemon.releaseIfOnly(containerId, conf.name, ifName, ms));
  }
  const endpoint = await askWithin(deadline, deps, (ms) => deps.daemon.getEndpoint(containerId, ms).answer());
  return { released: [], toTearDown: interfacesOf(endpoint, conf.name, ifName) };
}

/**
 * DelegatedNICs go home before the release, so a DEL retried after a failure still knows where they are;
 * a host veth whose delete failed is tried once more, by the record, and fails the DEL if it fails again.
 */
async function tearDownByRecord(
  records: InterfaceRecord[],
  netns: string,
  isHostVethGone: boolean,
  deps: Deps,
): Promise<void> {
  // A userspace device was never in the pod's netns: the release alone gives it back.
  const delegated = records.filter((nic) => nic.nicType === 'DelegatedNIC' && !nic.userspace);
  const podLinks = delegated.length > 0 && netns ? await deps.ip.linksIfPresent(netnsAt(netns)) : undefined;
  for (const nic of delegated) await teardownDelegatedNic(nic, netns, podLinks, deps);
  if (isHostVethGone) return;
  for (const nic of records) if (nic.nicType === 'InfraNIC') await teardownInfraNic(nic, deps);
}

/**
 * One request to ferryd (`call` gets the milliseconds left), asked again every 200 ms while ferryd is
 * running but does not answer, until `deadline`. A ferryd that is not running is not asked again. Both
 * requests a DEL starts with may be repeated: a release is idempotent, a read changes nothing.
 */
async function askWithin<T>(deadline: number, deps: Deps, call: (leftMs: number) => Promise<T>): Promise<T> {
  for (;;) {
    const left = deadline - Date.now();
    try {
      return await call(Math.max(1, left));
    } catch (err) {
      if (isNotListening(err)) {
        deps.log.info({ cause: err.message }, 'ferryd is not running: queueing the DEL without waiting');
        throw err;
      }
      if (!isDaemonDown(err) || Date.now() + 200 >= deadline) throw err;
      deps.log.info({ err: err.message, leftMs: left }, 'ferryd unreachable; trying again');
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * docs/architecture.md "DEL (ferryd down)": queued and the netns cleaned without state (fallback/), or, when ferryd
 * turned out to be serving after all (it came up while this DEL waited for the queue's lock), through it.
 */
async function delWithoutFerryd(args: CmdArgs, conf: ShimConf, deps: Deps, whyQueued: CniError): Promise<void> {
  // Loaded only now: the queue's schemas and file code are no part of a DEL that reaches ferryd.
  const { delWithoutDaemon } = await import('../fallback/del-offline');
  const queue = async (why: CniError, recheck: boolean) => {
    try {
      return await delWithoutDaemon(args, conf, deps, why, recheck);
    } catch (err) {
      throw queueingFailed(err, why);
    }
  };
  if ((await queue(whyQueued, true)) === 'queued') return;
  try {
    await delThroughFerryd(args, conf, deps);
  } catch (err) {
    // Ready a moment ago, silent now (still busy after its start-up drain): it watches the queue, so the
    // DEL is queued after all rather than failed back to the runtime.
    if (!(err instanceof CniError) || !isDaemonDown(err)) throw err;
    await queue(err, false);
  }
}

/** The fallback's own error, saying also why the fallback was needed. */
function queueingFailed(err: unknown, whyQueued: CniError): unknown {
  if (whyQueued.code === Code.StorageFailure) {
    // Neither ferryd nor the queue can keep this DEL: transient for the runtime, which retries it.
    const queueing = err instanceof Error ? err.message : String(err);
    return new CniError(
      Code.TryAgainLater,
      `${whyQueued.message}; and the DEL could not be queued either: ${queueing}`,
      whyQueued.details,
      { cause: err },
    );
  }
  if (!(err instanceof CniError)) return err;
  const why = `ferryd was unreachable: ${whyQueued.message}`;
  return new CniError(err.code, err.message, err.details ? `${err.details}; ${why}` : why, { cause: err });
}
