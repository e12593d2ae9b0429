/**
 * ADD (DESIGN.md "The two flows"): allocate (waiting for ferryd if needed) → build each NIC → commit
 * (a commit-journal entry: no second round trip) → result.
 * Anything that fails after allocate is undone in reverse order before the error is printed.
 */
import { type IpLink, SELF } from '@ferry/net';
import type { AllocateRequest, Allocation } from '@ferry/shared-types/api/allocations';
import type { CommitRequest } from '@ferry/shared-types/api/endpoints';
import type { AnyResult } from '@ferry/shared-types/cni/any-result';
import { commitJournalOf, writeJournalEntry } from '../commit-journal';
import type { ShimConf } from '../config';
import { isDaemonDown } from '../daemon-client';
import type { Deps } from '../deps';
import type { CmdArgs } from '../env';
import { buildDelegatedNic } from '../nic/delegated';
import { buildInfraNic } from '../nic/infra';
import { type BuiltPair, prevResultOf, toResult } from '../result';
import { Rollback } from '../rollback';
import { attachmentOf } from './attachment';

/**
 * Allocates at once when ferryd is serving (the common case: one round trip); when it is unreachable or
 * not ready yet, waits for readiness within the ADD budget and asks again. Never builds anything first.
 */
async function allocateWhenReady(req: AllocateRequest, d: Deps): Promise<Allocation> {
  try {
    return await d.daemon.allocate(req);
  } catch (err) {
    if (!isDaemonDown(err)) throw err;
    d.log.info({ err }, 'ferryd not ready; waiting');
  }
  await d.daemon.waitReady(d.addWaitMs);
  return d.daemon.allocate(req);
}

/**
 * Commits through the journal (no round trip; ferryd promotes the entry before anyone reads the
 * attachment), or over the socket when the journal cannot be written (no directory: an older ferryd).
 */
async function commitAdd(containerId: string, commit: CommitRequest, conf: ShimConf, d: Deps): Promise<void> {
  const dir = commitJournalOf(conf);
  try {
    const entry = writeJournalEntry(d.rt, dir, containerId, commit, new Date());
    d.log.debug({ entry: `${dir}/${entry}` }, 'committed through the journal');
    return;
  } catch (err) {
    const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
    d.log[missing ? 'debug' : 'warn']({ err, dir }, 'commit journal not written; committing over the socket');
  }
  await d.daemon.commit(containerId, commit);
  d.log.debug({}, 'committed');
}

export async function cmdAdd(args: CmdArgs, conf: ShimConf, d: Deps): Promise<AnyResult> {
  const prev = await prevResultOf(conf);
  const undo = new Rollback();
  try {
    const alloc = await allocateWhenReady(attachmentOf(args, conf), d);
    undo.push('release allocation', () => d.daemon.release(args.containerId, conf.name, args.ifName, alloc.generation));
    // Plans list the InfraNIC first (Azure's PR #4421 learned why: built after a delegated NIC it fails).
    const nics: BuiltPair[] = [];
    let nodeLinks: IpLink[] | undefined;
    for (const plan of alloc.nics) {
      if (plan.nicType === 'InfraNIC') {
        const mac = conf.runtimeConfig?.mac;
        const input = { plan, netns: args.netns, ...(mac ? { mac } : {}), ...(conf.mtu ? { mtu: conf.mtu } : {}) };
        nics.push({ plan, built: await buildInfraNic(input, undo, d) });
      } else {
        nodeLinks ??= await d.ip.listLinks(SELF);
        const at = { netns: args.netns, attachmentIfName: args.ifName, nodeLinks };
        nics.push({ plan, built: await buildDelegatedNic(plan, at, undo, d) });
      }
    }
    const commit: CommitRequest = {
      network: conf.name,
      ifName: args.ifName,
      generation: alloc.generation,
      nics: nics.map(({ built }) => ({
        ifName: built.ifName,
        mac: built.mac,
        containerIfIndex: built.containerIfIndex,
      })),
    };
    // Made before the commit: once committed, nothing may fail (there would be nothing left to undo).
    const result = toResult(conf, prev, args.netns, alloc, nics);
    await commitAdd(args.containerId, commit, conf, d);
    undo.commit();
    d.log.info(
      { generation: alloc.generation, nics: nics.map(({ built }) => `${built.ifName}@${built.containerIfIndex}`) },
      'added',
    );
    return result;
  } catch (err) {
    await undo.unwind(d.log);
    throw err;
  }
}
