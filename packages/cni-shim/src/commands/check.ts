/**
 * CHECK: the live pod and node against prevResult and against ferryd's record. ferryd unreachable is
 * code 11 (not a CHECK failure, as cilium-cni answers); every mismatch is listed in one CheckFailed.
 */
import {
  type IpAddrLink,
  IpBatch,
  type LinkRoute,
  netnsAt,
  parseAddrLinks,
  parseRoutes,
  sameMac,
  toAddresses,
  toMainRoutes,
} from '@ferry/net';
import type { InterfaceRecord } from '@ferry/shared-types/api/endpoints';
import type { AnyResult } from '@ferry/shared-types/cni/any-result';
import { CniError, Code } from '@ferry/shared-types/errors';
import { hostVethNameOf } from '@ferry/shared-types/host-veth';
import type { ShimConf } from '../config';
import type { Deps } from '../deps';
import type { CmdArgs } from '../env';
import { checkInfraHostSide, readHostVeth } from '../nic/infra';
import { prevResultOf } from '../result';
import { interfacesOf } from './attachment';

export async function cmdCheck(args: CmdArgs, conf: ShimConf, deps: Deps): Promise<undefined> {
  if (!conf.prevResult) throw new CniError(Code.InvalidConfig, 'invalid network config: CHECK needs prevResult');
  const prev = await prevResultOf(conf);
  // Sent now, answered below: ferryd looks the record up while this process reads the pod and the node.
  const endpoint = deps.daemon.getEndpoint(args.containerId);
  const pod = await inspectPod(args.netns, deps);
  // The host veth of the usual record is named after the attachment: read while ferryd answers.
  const host = await readHostVeth(
    hostVethNameOf(deps.runtime.sha256Hex, conf.name, args.containerId, args.ifName),
    deps,
  ).catch(() => undefined);
  const mine = interfacesOf(await endpoint.answer(), conf.name, args.ifName);
  if (mine.length === 0) {
    throw new CniError(
      Code.CheckFailed,
      `check ${args.containerId}/${args.ifName}: ferryd holds no record of this attachment`,
    );
  }
  const problems: string[] = [];
  for (const rec of mine) {
    if (rec.state !== 'committed') problems.push(`${rec.ifName}: ferryd's record is ${rec.state}, not committed`);
    if (rec.nicType === 'InfraNIC') problems.push(...(await checkInfraHostSide(rec, deps, host)));
    // A userspace device has nothing in the pod's netns to compare.
    if (rec.userspace) continue;
    problems.push(...(typeof pod === 'string' ? [pod] : checkPodSide(rec, args.netns, prev, pod)));
  }
  if (problems.length > 0) {
    throw new CniError(
      Code.CheckFailed,
      `check ${args.containerId}/${args.ifName}: ${problems[0]}`,
      problems.join('; '),
    );
  }
  deps.log.info({ interfaces: mine.length }, 'checked');
  return undefined;
}

interface PodView {
  links: IpAddrLink[];
  routes: LinkRoute[];
}

/** Every link with its addresses, and the routes, of the pod: one `ip` run. A string says why not. */
async function inspectPod(netns: string, deps: Deps): Promise<PodView | string> {
  try {
    const docs = await deps.ip.apply(netnsAt(netns), new IpBatch().showAllAddrs().showRoutes(), `inspect ${netns}`);
    return {
      links: await parseAddrLinks(docs, 'links'),
      routes: toMainRoutes(await parseRoutes(docs.slice(1), 'routes')),
    };
  } catch (err) {
    return `cannot inspect ${netns}: ${(err as Error).message}`;
  }
}

function checkPodSide(rec: InterfaceRecord, netns: string, prev: AnyResult, pod: PodView): string[] {
  const link = pod.links.find((l) => l.ifname === rec.ifName);
  if (!link) return [`${rec.ifName} is missing from ${netns}`];
  const problems: string[] = [];
  if (rec.mac && !sameMac(link.address, rec.mac))
    problems.push(`${rec.ifName} has MAC ${link.address}, ferryd recorded ${rec.mac}`);
  if (rec.containerIfIndex && link.ifindex !== rec.containerIfIndex) {
    problems.push(`${rec.ifName} has ifindex ${link.ifindex}, ferryd recorded ${rec.containerIfIndex}`);
  }
  const live = new Set(toAddresses(link).map((a) => `${a.local}/${a.prefixlen}`));
  const index = (prev.interfaces ?? []).findIndex((i) => i.name === rec.ifName && i.sandbox === netns);
  if (index < 0) problems.push(`prevResult lists no interface ${rec.ifName} in ${netns}`);
  const expected = new Set([
    ...rec.addresses.map((a) => a.address),
    ...(prev.ips ?? []).filter((ip) => ip.interface === index).map((ip) => ip.address),
  ]);
  for (const a of expected) if (!live.has(a)) problems.push(`${rec.ifName} lacks address ${a}`);
  for (const r of prev.routes ?? []) {
    const gw = typeof r.gw === 'string' ? r.gw : undefined;
    if (!pod.routes.some((live) => live.dst === r.dst && (gw === undefined || live.gateway === gw)))
      problems.push(`route to ${r.dst}${gw ? ` via ${gw}` : ''} is missing`);
  }
  return problems;
}
