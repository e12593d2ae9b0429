/**
 * ADD (DESIGN.md "The two flows"): allocate (waiting for ferryd if needed) → build each NIC → commit
 * (a commit-journal entry: no second round trip) → result. The InfraNIC's veth pair, which depends on
 * nothing ferryd decides, is created while ferryd allocates.
 * Anything that fails is undone in reverse order before the error is printed.
 */
import { type IpLink, SELF } from '@ferry/net';
import type { Allocation } from '@ferry/shared-types/api/allocations';
import type { CommitRequest } from '@ferry/shared-types/api/endpoints';
import type { AnyResult } from '@ferry/shared-types/cni/any-result';
import { HOST_VETH_MAC, hostVethNameOf } from '@ferry/shared-types/host-veth';
import { commitJournalOf, writeJournalEntry } from '../commit-journal';
import type { ShimConf } from '../config';
import { isDaemonDown } from '../daemon-client';
import type { Deps } from '../deps';
import type { CmdArgs } from '../env';
import { buildDelegatedNic } from '../nic/delegated';
import { buildInfraNic, createPairEarly, type PairSpec } from '../nic/infra';
import { type BuiltPair, prevResultOf, toResult } from '../result';
import { Rollback } from '../rollback';
import { attachmentOf } from './attachment';

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

/**
 * The InfraNIC's veth pair, created while ferryd allocates (every plan has an InfraNIC, and everything
 * the pair is born with is known before the plan); its undo is armed at once. Undefined when it was not
 * created: the usual path then creates it after the plan.
 */
async function pairWhileAllocating(
  args: CmdArgs,
  conf: ShimConf,
  undo: Rollback,
  d: Deps,
): Promise<PairSpec | undefined> {
  const mac = conf.runtimeConfig?.mac;
  const pair: PairSpec = {
    hostVethName: hostVethNameOf(d.rt.sha256Hex, conf.name, args.containerId, args.ifName),
    hostVethMac: HOST_VETH_MAC,
    ifName: args.ifName,
    netns: args.netns,
    ...(mac ? { mac } : {}),
    ...(conf.mtu ? { mtu: conf.mtu } : {}),
  };
  if (!(await createPairEarly(pair, d))) return undefined;
  undo.push(`delete host veth ${pair.hostVethName}`, () => d.ip.deleteLink(SELF, pair.hostVethName));
  d.log.debug({ hostVethName: pair.hostVethName }, 'veth pair created while ferryd allocates');
  return pair;
}

export async function cmdAdd(args: CmdArgs, conf: ShimConf, d: Deps): Promise<AnyResult> {
  const prev = await prevResultOf(conf);
  const undo = new Rollback();
  try {
    const req = attachmentOf(args, conf);
    // Sent now, answered below: the pair is made while ferryd allocates.
    const allocating = d.daemon.allocate(req);
    let early = await pairWhileAllocating(args, conf, undo, d);
    let alloc: Allocation;
    try {
      alloc = await allocating.answer();
    } catch (err) {
      if (!isDaemonDown(err)) throw err;
      // ferryd is down, starting or frozen: no pair stays in the pod while ADD waits for it (a pod is never
      // configured without a record), and the pair is made after the plan.
      // (A delete that fails leaves it to the usual path, which replaces a leftover pair of this name.)
      if (early)
        await d.ip.deleteLink(SELF, early.hostVethName).catch((e: unknown) => d.log.warn({ err: e }, 'pair kept'));
      early = undefined;
      d.log.info({ err }, 'ferryd not ready; waiting');
      await d.daemon.waitReady(d.addWaitMs);
      alloc = await d.daemon.allocate(req).answer();
    }
    undo.push('release allocation', () => d.daemon.release(args.containerId, conf.name, args.ifName, alloc.generation));
    // Plans list the InfraNIC first (Azure's PR #4421 learned why: built after a delegated NIC it fails).
    const nics: BuiltPair[] = [];
    let nodeLinks: IpLink[] | undefined;
    for (const plan of alloc.nics) {
      if (plan.nicType === 'InfraNIC') {
        const mac = conf.runtimeConfig?.mac;
        const input = { plan, netns: args.netns, ...(mac ? { mac } : {}), ...(conf.mtu ? { mtu: conf.mtu } : {}) };
        nics.push({ plan, built: await buildInfraNic(input, undo, d, early) });
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
