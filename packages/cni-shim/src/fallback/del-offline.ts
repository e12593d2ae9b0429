/**
 * DEL when ferryd cannot be reached, or cannot store the release (docs/architecture.md "DEL (ferryd down)"): queue the
 * intent durably, clean the pod netns without state, exit 0. Kubelet is never kept waiting on ferryd, and
 * nothing is lost.
 */
import { lockFile } from '@ferry/files/lock';
import { joinName } from '@ferry/files/paths';
import { DEFAULT_DELETE_QUEUE, DEFAULT_DELETE_QUEUE_LIMIT } from '@ferry/shared-types/config/defaults';
import { CniError, Code } from '@ferry/shared-types/errors';
import { podOf } from '../commands/attachment';
import type { ShimConf } from '../config';
import type { Deps } from '../deps';
import type { CmdArgs } from '../env';
import { prevResultOf } from '../result';
import { prepareQueueDir, toEntry, writeEntry } from './delete-queue';
import { cleanPodNetns } from './netns-cleanup';

/** How long the shim waits for the queue lock (ferryd holds it only while draining at start-up). */
const LOCK_WAIT_MS = 5000;
/** The re-check of ferryd under the lock is one quick look, not another wait. */
const RECHECK_MS = 500;

/**
 * Queues the DEL and cleans the netns. With `recheck`, returns 'online' instead when ferryd turned out to
 * be serving after all (it came up while this DEL waited for the lock): the caller then deletes through it.
 */
export async function delWithoutDaemon(
  args: CmdArgs,
  conf: ShimConf,
  deps: Deps,
  cause: CniError,
  recheck: boolean,
): Promise<'queued' | 'online'> {
  const dir = conf.deleteQueue ?? DEFAULT_DELETE_QUEUE;
  const pod = podOf(args);
  const entry = toEntry({
    network: conf.name,
    containerId: args.containerId,
    ifName: args.ifName,
    netns: args.netns,
    ...(Object.keys(pod).length > 0 ? { pod } : {}),
    ...(conf.prevResult !== undefined ? { prevResult: conf.prevResult } : {}),
    queuedAt: new Date().toISOString(),
  });
  prepareQueueDir(dir);
  const lock = await lockFile(joinName(dir, 'lock'), 'shared', LOCK_WAIT_MS);
  if (!lock) {
    throw new CniError(
      Code.TryAgainLater,
      `queue DEL of ${args.containerId}/${args.ifName}: ${dir}/lock stayed locked for ${LOCK_WAIT_MS} ms (ferryd draining)`,
    );
  }
  try {
    if (recheck && (await deps.daemon.isReady(RECHECK_MS))) return 'online';
    const name = writeEntry(deps.runtime, dir, conf.deleteQueueLimit ?? DEFAULT_DELETE_QUEUE_LIMIT, entry);
    deps.log.warn({ entry: joinName(dir, name), cause: cause.message }, 'DEL queued for ferryd to apply');
    // Still under the lock: a ferryd starting now drains (and frees the devices) only once they are home.
    await cleanPodNetns(args.netns, args.ifName, deps, await ownMacsOf(conf, args.netns));
  } finally {
    lock.release();
  }
  return 'queued';
}

/** The MACs prevResult lists in the pod (the attachment's own interfaces); undefined without one. */
async function ownMacsOf(conf: ShimConf, netns: string): Promise<ReadonlySet<string> | undefined> {
  const prev = await prevResultOf(conf).catch(() => undefined);
  const inPod = prev?.interfaces?.filter((i) => i.sandbox === netns && i.mac);
  return inPod?.length ? new Set(inPod.map((i) => (i.mac as string).toLowerCase())) : undefined;
}
