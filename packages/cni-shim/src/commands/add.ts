/**
 * ADD (docs/architecture.md "ADD (ferryd up)"): allocate (waiting for ferryd if needed) → build each NIC → commit
 * (a commit-journal entry: no second round trip) → result. The InfraNIC's veth pair, which depends on
 * nothing ferryd decides, is created while ferryd allocates.
 * Every step's undo is armed in one Rollback as the step is made, and anything that fails is undone in
 * reverse order before the error is printed.
 */
import { type IpLink, SELF } from '@ferry/net';
import type { Allocation, InfraNicPlan } from '@ferry/shared-types/api/allocations';
import type { CommitRequest } from '@ferry/shared-types/api/endpoints';
import type { AnyResult } from '@ferry/shared-types/cni/any-result';
import { POD_LOOKUP_FAILED } from '@ferry/shared-types/errors';
import { HOST_VETH_MAC, hostVethNameOf } from '@ferry/shared-types/host-veth';
import { commitJournalOf, writeJournalEntry } from '../commit-journal';
import type { ShimConf } from '../config';
import { isDaemonDown } from '../daemon-client';
import type { Deps } from '../deps';
import type { CmdArgs } from '../env';
import { buildDelegatedNic } from '../nic/delegated';
import { buildInfraNic, createPairEarly, type InfraBuildInput, type PairSpec } from '../nic/infra';
import { type BuiltPair, prevResultOf, toResult } from '../result';
import { Rollback } from '../rollback';
import { attachmentOf } from './attachment';

export async function cmdAdd(args: CmdArgs, conf: ShimConf, deps: Deps): Promise<AnyResult> {
  const prev = await prevResultOf(conf);
  const undo = new Rollback();
  try {
    const { allocation, earlyPair } = await allocate(args, conf, undo, deps);
    const { containerId, ifName } = args;
    undo.push('release allocation', () => deps.daemon.release(containerId, conf.name, ifName, allocation.generation));
    const nics = await buildNics(allocation, args, conf, undo, deps, earlyPair);
    // Made before the commit: once committed, nothing may fail (there would be nothing left to undo).
    const result = toResult(conf, prev, args.netns, allocation, nics);
    await commit(containerId, commitRequestOf(conf, args, allocation, nics), conf, deps);
    undo.commit();
    const built = nics.map(({ built: b }) =>
      'userspace' in b ? `${b.ifName}(userspace)` : `${b.ifName}@${b.containerIfIndex}`,
    );
    deps.log.info({ generation: allocation.generation, nics: built }, 'added');
    return result;
  } catch (err) {
    await undo.unwind(deps.log);
    throw err;
  }
}

/**
 * ferryd's plan for the attachment, with the InfraNIC's veth pair made while ferryd answers (`earlyPair`,
 * its undo armed; absent when it was not made: the usual path makes it after the plan). ferryd down,
 * starting or frozen: what was made is undone (a pod is never configured without a record, not even
 * while ADD waits), then ADD waits for ferryd's readiness and asks again. ferryd ready but unable to
 * look the pod up (code 11 too) fails the ADD at once, its undo run by the caller's rollback.
 */
async function allocate(
  args: CmdArgs,
  conf: ShimConf,
  undo: Rollback,
  deps: Deps,
): Promise<{ allocation: Allocation; earlyPair?: PairSpec }> {
  const request = attachmentOf(args, conf);
  // Sent now, answered below: the pair is made while ferryd allocates (unless the network says it has
  // no InfraNIC, or the runtime names a device, as only a secondary network's runtime does).
  const allocating = deps.daemon.allocate(request);
  const isSecondary = conf.infraNIC === false || request.deviceId !== undefined;
  const earlyPair = isSecondary ? undefined : await createPairWhileAllocating(args, conf, undo, deps);
  try {
    return { allocation: await allocating.answer(), ...(earlyPair ? { earlyPair } : {}) };
  } catch (err) {
    // A ready ferryd that could not look the pod up: the runtime retries; asking again would wait as long.
    if (!isDaemonDown(err) || err.details === POD_LOOKUP_FAILED) throw err;
    await undo.unwind(deps.log);
    deps.log.info({ err }, 'ferryd not ready; waiting');
  }
  await deps.daemon.waitReady(deps.addWaitMs);
  return { allocation: await deps.daemon.allocate(request).answer() };
}

/**
 * The InfraNIC's veth pair, created while ferryd allocates (every plan has an InfraNIC, and everything
 * the pair is born with is known before the plan); its undo is armed at once. Undefined when it was not
 * created.
 */
async function createPairWhileAllocating(
  args: CmdArgs,
  conf: ShimConf,
  undo: Rollback,
  deps: Deps,
): Promise<PairSpec | undefined> {
  const mac = conf.runtimeConfig?.mac;
  const pair: PairSpec = {
    hostVethName: hostVethNameOf(deps.runtime.sha256Hex, conf.name, args.containerId, args.ifName),
    hostVethMac: HOST_VETH_MAC,
    ifName: args.ifName,
    netns: args.netns,
    ...(mac ? { mac } : {}),
    ...(conf.mtu ? { mtu: conf.mtu } : {}),
  };
  if (!(await createPairEarly(pair, deps))) return undefined;
  undo.push(`delete host veth ${pair.hostVethName}`, () => deps.ip.deleteLink(SELF, pair.hostVethName));
  deps.log.debug({ hostVethName: pair.hostVethName }, 'veth pair created while ferryd allocates');
  return pair;
}

/**
 * Builds the plan's NICs in its order: the InfraNIC first (Azure's PR #4421: built after a delegated NIC
 * it fails); a secondary network's plan is its one DelegatedNIC, named CNI_IFNAME.
 */
async function buildNics(
  allocation: Allocation,
  args: CmdArgs,
  conf: ShimConf,
  undo: Rollback,
  deps: Deps,
  earlyPair: PairSpec | undefined,
): Promise<BuiltPair[]> {
  const nics: BuiltPair[] = [];
  let nodeLinks: IpLink[] | undefined;
  // A secondary network's plan has no InfraNIC: its device takes CNI_IFNAME, which the pair holds, and
  // its marker names the attachment (no host veth does).
  const secondary = !allocation.nics.some((n) => n.nicType === 'InfraNIC');
  if (earlyPair && secondary) await deps.ip.deleteLink(SELF, earlyPair.hostVethName);
  const key = { generation: allocation.generation, network: conf.name, containerId: args.containerId };
  for (const plan of allocation.nics) {
    if (plan.nicType === 'InfraNIC') {
      nics.push({ plan, built: await buildInfraNic(infraInputOf(plan, args, conf), undo, deps, earlyPair) });
    } else if ('userspace' in plan) {
      // A userspace device has no netdev: nothing moves. The container opens it through the /dev/vfio
      // devices the device plugin gave it; ferryd's record (the commit) says the pod holds it.
      nics.push({ plan, built: { ifName: plan.ifName, userspace: true } });
    } else {
      nodeLinks ??= await deps.ip.listLinks(SELF);
      const target = {
        netns: args.netns,
        attachmentIfName: args.ifName,
        nodeLinks,
        ...(secondary ? { attachment: key } : {}),
      };
      nics.push({ plan, built: await buildDelegatedNic(plan, target, undo, deps) });
    }
  }
  return nics;
}

function infraInputOf(plan: InfraNicPlan, args: CmdArgs, conf: ShimConf): InfraBuildInput {
  const mac = conf.runtimeConfig?.mac;
  return { plan, netns: args.netns, ...(mac ? { mac } : {}), ...(conf.mtu ? { mtu: conf.mtu } : {}) };
}

/** What only the shim knows, for ferryd's record: each interface's MAC and its ifindex after the final move. */
function commitRequestOf(conf: ShimConf, args: CmdArgs, allocation: Allocation, nics: BuiltPair[]): CommitRequest {
  return {
    network: conf.name,
    ifName: args.ifName,
    generation: allocation.generation,
    nics: nics.map(({ built }) =>
      'userspace' in built ? built : { ifName: built.ifName, mac: built.mac, containerIfIndex: built.containerIfIndex },
    ),
  };
}

/**
 * Commits through the journal (no round trip; ferryd promotes the entry before anyone reads the
 * attachment), or over the socket (PUT /v1/endpoints/{containerId}) where the journal cannot be written:
 * its directory is missing (ferryd, which creates it, has not run on this node yet, or it was removed),
 * read-only or full.
 */
async function commit(containerId: string, request: CommitRequest, conf: ShimConf, deps: Deps): Promise<void> {
  const dir = commitJournalOf(conf);
  try {
    const entry = writeJournalEntry(deps.runtime, dir, containerId, request, new Date());
    deps.log.debug({ entry: `${dir}/${entry}` }, 'committed through the journal');
    return;
  } catch (err) {
    const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
    deps.log[missing ? 'debug' : 'warn']({ err, dir }, 'commit journal not written; committing over the socket');
  }
  await deps.daemon.commitWithoutJournal(containerId, request);
  deps.log.debug({}, 'committed');
}
