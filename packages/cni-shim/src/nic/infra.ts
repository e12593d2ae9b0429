/**
 * The InfraNIC: a routed veth pair ("transparent" mode, no bridge). The pod side is named CNI_IFNAME
 * and carries /32 and /128 addresses; the host side carries only a route per pod address.
 *
 * The pod's default route points at a link-local gateway (169.254.1.1, fe80::ecee:eeff:feee:eeee) that
 * a permanent neighbour entry maps to the host veth's fixed MAC, so the pod never has to resolve it and
 * the node needs no per-pod gateway address. proxy_arp on the host veth keeps the gateway answering if
 * someone flushes the pod's neighbour table. The host veth carries the IPv6 gateway address itself
 * (without DAD), because the kernel sends no neighbour solicitation from a link without a link-local
 * address.
 */
import {
  ensureSysctl,
  FORWARDING,
  IpBatch,
  type IpLink,
  isNetError,
  type LinkRoute,
  netnsAt,
  parseLinks,
  SELF,
} from '@ferry/net';
import type { InfraNicPlan } from '@ferry/shared-types/api/allocations';
import type { BuiltNic, InterfaceRecord } from '@ferry/shared-types/api/endpoints';
import { CniError, Code } from '@ferry/shared-types/errors';
import type { Deps } from '../deps';
import type { Rollback } from '../rollback';

export interface InfraBuildInput {
  plan: InfraNicPlan;
  netns: string;
  /** runtimeConfig.mac (the "mac" capability), for the pod side. */
  mac?: string;
  mtu?: number;
}

export interface BuiltInfraNic extends BuiltNic {
  mtu?: number;
}

const hasFamily = (plan: InfraNicPlan, f: 4 | 6) => plan.addresses.some((a) => a.family === f);

/**
 * A veth pair as it is created: what it is named and born with, all of it known before ferryd's plan
 * (the host veth's name is derived from the attachment, its MAC is HOST_VETH_MAC, the MTU and the pod
 * side's MAC come from the config), so ADD can create it while ferryd allocates.
 */
export interface PairSpec {
  hostVethName: string;
  hostVethMac: string;
  ifName: string;
  netns: string;
  mac?: string;
  mtu?: number;
}

function pairOf(input: InfraBuildInput): PairSpec {
  const { plan } = input;
  const mtu = input.mtu ?? plan.mtu;
  return {
    hostVethName: plan.hostVethName,
    hostVethMac: plan.hostVethMac,
    ifName: plan.ifName,
    netns: input.netns,
    ...(input.mac ? { mac: input.mac } : {}),
    ...(mtu ? { mtu } : {}),
  };
}

const samePair = (a: PairSpec, b: PairSpec) =>
  a.hostVethName === b.hostVethName &&
  a.hostVethMac === b.hostVethMac &&
  a.ifName === b.ifName &&
  a.netns === b.netns &&
  a.mac === b.mac &&
  a.mtu === b.mtu;

function addPair(b: IpBatch, p: PairSpec): IpBatch {
  const mtu = p.mtu ? { mtu: p.mtu } : {};
  return b.addVeth({
    name: p.hostVethName,
    mac: p.hostVethMac,
    ...mtu,
    peer: { name: p.ifName, netns: p.netns, ...(p.mac ? { mac: p.mac } : {}), ...mtu },
  });
}

/**
 * Creates the pair before the plan arrives (ADD calls it while ferryd allocates: the kernel's slowest
 * step then overlaps the round trip). True when it did; false, having changed nothing, when it could not:
 * a name already taken (a leftover, or the live pod of a second ADD) is left for the usual path to judge
 * once ferryd has said whose it is. The caller arms the undo.
 */
export async function createPairEarly(pair: PairSpec, deps: Deps): Promise<boolean> {
  try {
    await deps.ip.apply(SELF, addPair(new IpBatch(), pair), `create veth ${pair.hostVethName} ahead of the plan`);
    return true;
  } catch (err) {
    deps.log.debug({ err, hostVethName: pair.hostVethName }, 'veth pair not created ahead of the plan');
    return false;
  }
}

/** The host side's batch; `pairExists`: the pair was created ahead of the plan, exactly as the plan wants. */
function hostSide(input: InfraBuildInput, pairExists = false): IpBatch {
  const { plan } = input;
  const b = pairExists ? new IpBatch() : addPair(new IpBatch(), pairOf(input));
  const v6 = plan.addresses.find((a) => a.family === 6);
  if (v6?.gateway) {
    b.setAddrGenMode(plan.hostVethName, 'none');
    b.addAddress(plan.hostVethName, `${v6.gateway}/64`, { nodad: true });
  }
  // The marker rides on the request that sets the veth up: the node can say whose it is at no extra cost.
  b.setUp(plan.hostVethName, { alias: plan.hostVethAlias });
  for (const a of plan.addresses) b.addRoute({ dst: a.address, dev: plan.hostVethName, scope: 'link' });
  return b;
}

function podSide(input: InfraBuildInput): IpBatch {
  const { plan } = input;
  const b = new IpBatch().setUp(plan.ifName);
  for (const a of plan.addresses) b.addAddress(plan.ifName, a.address, { nodad: a.family === 6 });
  const gateways = new Set(plan.addresses.flatMap((a) => (a.gateway ? [a.gateway] : [])));
  for (const gw of gateways) {
    // IPv4 needs a link route to the gateway before anything can route via it; IPv6 link-local is on-link.
    if (!gw.includes(':')) b.addRoute({ dst: `${gw}/32`, dev: plan.ifName, scope: 'link' });
    b.replaceNeigh(gw, plan.hostVethMac, plan.ifName);
  }
  for (const r of plan.routes) b.addRoute({ dst: r.dst, dev: plan.ifName, ...(r.gw ? { via: r.gw } : {}) });
  return b.showLink(plan.ifName);
}

/**
 * Builds the InfraNIC. The peer is born inside the pod's netns under its final name, so it never
 * exists in the node namespace and never needs a rename; the kernel refuses the whole pair if
 * CNI_IFNAME already exists in the pod, which is the spec's MUST.
 */
export async function buildInfraNic(
  input: InfraBuildInput,
  undo: Rollback,
  deps: Deps,
  early?: PairSpec,
): Promise<BuiltInfraNic> {
  const { plan } = input;
  const pod = netnsAt(input.netns);
  const reuse = early !== undefined && samePair(early, pairOf(input));
  // A pair made ahead of a plan that wants it otherwise (an MTU set in ferryd's network).
  if (early && !reuse) await deps.ip.deleteLink(SELF, early.hostVethName);
  // Armed before the host batch: it may stop after the pair exists (an address or a route refused).
  // The name is this attachment's own, and ADD never gets this far for a committed attachment.
  undo.push(`delete host veth ${plan.hostVethName}`, () => deps.ip.deleteLink(SELF, plan.hostVethName));
  if (reuse) await deps.ip.apply(SELF, hostSide(input, true), `configure host veth ${plan.hostVethName}`);
  else await createPair(input, deps);
  deps.log.debug({ hostVethName: plan.hostVethName }, 'veth pair created');
  if (hasFamily(plan, 4)) {
    ensureSysctl(['net', 'ipv4', 'conf', plan.hostVethName, 'proxy_arp'], '1');
    ensureSysctl(FORWARDING[4], '1');
  }
  if (hasFamily(plan, 6)) ensureSysctl(FORWARDING[6], '1');
  deps.log.debug({}, 'node sysctls set');
  const shown = await deps.ip.apply(pod, podSide(input), `configure ${plan.ifName}`);
  deps.log.debug({}, 'pod side configured');
  const link = (await parseLinks(shown, plan.ifName))[0];
  if (!link?.address)
    throw new CniError(Code.NetlinkFailure, `configure ${plan.ifName} in ${input.netns}: link vanished`);
  return {
    ifName: plan.ifName,
    mac: link.address,
    containerIfIndex: link.ifindex,
    ...(link.mtu ? { mtu: link.mtu } : {}),
  };
}

async function createPair(input: InfraBuildInput, deps: Deps): Promise<void> {
  const { plan } = input;
  const what = `create veth ${plan.hostVethName} with ${plan.ifName} in ${input.netns}`;
  try {
    await deps.ip.apply(SELF, hostSide(input), what);
    return;
  } catch (err) {
    // Only the pair's own line (the first) can clash on a name; a later line's is an address or a route.
    if (!isNetError(err, 'exists', 0)) throw err;
  }
  // Which name clashed? The pod's CNI_IFNAME is an error the runtime must see; a host veth with our
  // deterministic name is a leftover of an earlier ADD of this attachment that never committed (ferryd
  // refuses an ADD of a committed one before anything is built).
  if (await deps.ip.getLink(netnsAt(input.netns), plan.ifName)) {
    throw new CniError(
      Code.InterfaceExists,
      `create ${plan.ifName} in ${input.netns}: an interface with that name already exists`,
    );
  }
  deps.log.warn({ hostVethName: plan.hostVethName }, 'removing a leftover host veth of an interrupted ADD');
  await deps.ip.deleteLink(SELF, plan.hostVethName);
  await deps.ip.apply(SELF, hostSide(input), what);
}

/** Deletes the host veth; the pod side and the host routes go with it. Absent counts as done. */
export async function teardownInfraNic(rec: InterfaceRecord, deps: Deps): Promise<void> {
  if (!rec.hostVethName) return;
  const r = await deps.ip.deleteLink(SELF, rec.hostVethName);
  deps.log.info({ hostVethName: rec.hostVethName, result: r }, 'host veth deleted');
}

/** The node side of an InfraNIC as CHECK reads it: its host veth (undefined: absent) and that veth's routes. */
export interface HostVethView {
  name: string;
  link: IpLink | undefined;
  routes: LinkRoute[];
}

export async function readHostVeth(name: string, deps: Deps): Promise<HostVethView> {
  const link = await deps.ip.getLink(SELF, name);
  return { name, link, routes: link ? await deps.ip.listRoutes(SELF, name) : [] };
}

/**
 * What CHECK verifies on the node side: the host veth is there and routes each pod address. `seen` is a
 * view read earlier (while ferryd was being asked); it is used when it is of the recorded veth.
 */
export async function checkInfraHostSide(rec: InterfaceRecord, deps: Deps, seen?: HostVethView): Promise<string[]> {
  const problems: string[] = [];
  if (!rec.hostVethName) return ['ferryd recorded no host veth'];
  const { link, routes } = seen?.name === rec.hostVethName ? seen : await readHostVeth(rec.hostVethName, deps);
  if (!link) return [`host veth ${rec.hostVethName} is missing`];
  if (!link.flags?.includes('UP')) problems.push(`host veth ${rec.hostVethName} is down`);
  for (const a of rec.addresses) {
    if (!routes.some((r) => r.dev === rec.hostVethName && r.dst === a.address)) {
      problems.push(`no host route to ${a.address} via ${rec.hostVethName}`);
    }
  }
  return problems;
}
