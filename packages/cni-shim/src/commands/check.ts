/**
 * CHECK: the live pod and node against prevResult and against ferryd's record. ferryd unreachable is
 * code 11 (not a CHECK failure, as cilium-cni answers); every mismatch is listed in one CheckFailed.
 */
import {
  IpAddrListSchema,
  IpBatch,
  IpRouteListSchema,
  type LinkRoute,
  netnsAt,
  parseOne,
  toAddresses,
  toMainRoutes,
} from '@ferry/net';
import type { InterfaceRecord } from '@ferry/shared-types/api/endpoints';
import { type AnyResult, AnyResultSchema } from '@ferry/shared-types/cni/any-result';
import { CniError, Code } from '@ferry/shared-types/errors';
import { parseAs } from '@ferry/shared-types/parse';
import type { ShimConf } from '../config';
import type { Deps } from '../deps';
import type { CmdArgs } from '../env';
import { checkInfraHostSide } from '../nic/infra';

export async function cmdCheck(args: CmdArgs, conf: ShimConf, d: Deps): Promise<undefined> {
  if (!conf.prevResult) throw new CniError(Code.InvalidConfig, 'invalid network config: CHECK needs prevResult');
  const prev = parseAs(AnyResultSchema, conf.prevResult, Code.InvalidConfig, 'invalid network config: prevResult');
  const ep = await d.daemon.getEndpoint(args.containerId);
  const mine = (ep?.interfaces ?? []).filter((i) => i.network === conf.name && i.attachmentIfName === args.ifName);
  if (mine.length === 0) {
    throw new CniError(
      Code.CheckFailed,
      `check ${args.containerId}/${args.ifName}: ferryd holds no record of this attachment`,
    );
  }
  const problems: string[] = [];
  for (const rec of mine) {
    if (rec.state !== 'committed') problems.push(`${rec.ifName}: ferryd's record is ${rec.state}, not committed`);
    if (rec.nicType === 'InfraNIC') problems.push(...(await checkInfraHostSide(rec, d)));
    problems.push(...(await checkPodSide(rec, args, prev, d)));
  }
  if (problems.length > 0) {
    throw new CniError(
      Code.CheckFailed,
      `check ${args.containerId}/${args.ifName}: ${problems[0]}`,
      problems.join('; '),
    );
  }
  d.log.info({ interfaces: mine.length }, 'checked');
  return undefined;
}

async function checkPodSide(rec: InterfaceRecord, args: CmdArgs, prev: AnyResult, d: Deps): Promise<string[]> {
  let docs: unknown[];
  try {
    docs = await d.ip.apply(netnsAt(args.netns), new IpBatch().showAllAddrs().showRoutes(), `inspect ${args.netns}`);
  } catch (err) {
    return [`cannot inspect ${args.netns}: ${(err as Error).message}`];
  }
  const link = parseOne(IpAddrListSchema, docs, 'links').find((l) => l.ifname === rec.ifName);
  if (!link) return [`${rec.ifName} is missing from ${args.netns}`];
  const problems: string[] = [];
  if (rec.mac && link.address !== rec.mac)
    problems.push(`${rec.ifName} has MAC ${link.address}, ferryd recorded ${rec.mac}`);
  if (rec.containerIfIndex && link.ifindex !== rec.containerIfIndex) {
    problems.push(`${rec.ifName} has ifindex ${link.ifindex}, ferryd recorded ${rec.containerIfIndex}`);
  }
  const live = new Set(toAddresses(link).map((a) => `${a.local}/${a.prefixlen}`));
  const index = (prev.interfaces ?? []).findIndex((i) => i.name === rec.ifName && i.sandbox === args.netns);
  if (index < 0) problems.push(`prevResult lists no interface ${rec.ifName} in ${args.netns}`);
  const expected = new Set([
    ...rec.addresses.map((a) => a.address),
    ...(prev.ips ?? []).filter((ip) => ip.interface === index).map((ip) => ip.address),
  ]);
  for (const a of expected) if (!live.has(a)) problems.push(`${rec.ifName} lacks address ${a}`);
  const routes = toMainRoutes(parseOne(IpRouteListSchema, docs.slice(1), 'routes'));
  for (const r of prev.routes ?? []) {
    const gw = typeof r.gw === 'string' ? r.gw : undefined;
    if (!routes.some((live) => sameRoute(live, r.dst, gw)))
      problems.push(`route to ${r.dst}${gw ? ` via ${gw}` : ''} is missing`);
  }
  return problems;
}

function sameRoute(live: LinkRoute, dst: string, gw: string | undefined): boolean {
  const liveDst = live.dst === 'default' ? (live.family === 6 ? '::/0' : '0.0.0.0/0') : live.dst;
  const wanted = dst.endsWith('/32') || dst.endsWith('/128') ? [dst, dst.split('/')[0]] : [dst];
  return wanted.includes(liveDst) && (gw === undefined || live.gateway === gw);
}
