/**
 * ferryd's usual answers checked by hand. Building AllocationSchema or EndpointSchema and parsing with it
 * costs ~0.8 ms of an ADD, CHECK or DEL (zod constructs run cold once per process). These checks accept only
 * what the schemas accept and return it unchanged (the schemas transform nothing); anything they are not
 * sure of — an IPv6 address in a rarer notation, upper-case MACs, a field they do not know — goes to the
 * schema, which also words the error. answers.test.ts holds them to the schemas.
 */
import type { Allocation } from '@ferry/shared-types/api/allocations';
import type { Endpoint, ReleaseResult } from '@ferry/shared-types/api/endpoints';
import {
  arrayOf,
  type Check,
  isContainerId,
  isIfName,
  isInt,
  isMac,
  isNetworkName,
  isPositiveInt,
  isString,
  maxLength,
  oneOf,
  strictObject,
} from '@ferry/shared-types/hand-check';

/** zod's own ipv4 and cidrv4 patterns. */
const IPV4 =
  /^(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])$/;

/** Hexadecimal groups with at most one "::", lower case, no embedded IPv4. */
function isIpv6(s: string): boolean {
  if (!/^[0-9a-f:]+$/.test(s)) return false;
  const halves = s.split('::');
  if (halves.length > 2) return false;
  const groups = halves.flatMap((h) => (h === '' ? [] : h.split(':')));
  if (groups.some((g) => g.length < 1 || g.length > 4)) return false;
  return halves.length === 2 ? groups.length <= 7 : groups.length === 8;
}

const isIp: Check = (v) => typeof v === 'string' && (IPV4.test(v) || isIpv6(v));

function isCidr(v: unknown): boolean {
  if (typeof v !== 'string') return false;
  const [address = '', prefix, extra] = v.split('/');
  if (prefix === undefined || extra !== undefined || `${Number(prefix)}` !== prefix) return false;
  const len = Number(prefix);
  return IPV4.test(address) ? len <= 32 : isIpv6(address) && len <= 128;
}

const isAddress = strictObject({ family: oneOf(4, 6), address: isCidr }, { gateway: isIp });
const isRoute = strictObject({ dst: isCidr }, { gw: isIp });
const isInfraPlan = strictObject(
  {
    nicType: oneOf('InfraNIC'),
    ifName: isIfName,
    endpointId: isString,
    hostVethName: isIfName,
    hostVethMac: isMac,
    hostVethAlias: maxLength(255),
    addresses: arrayOf(isAddress),
    routes: arrayOf(isRoute),
  },
  { mtu: isInt },
);
const isDelegatedPlan = strictObject({
  nicType: oneOf('DelegatedNIC'),
  ifName: isIfName,
  endpointId: isString,
  mac: isMac,
  hostIfName: isIfName,
  addresses: arrayOf(isAddress),
  routes: arrayOf(isRoute),
});
const isStrings = arrayOf(isString);
const isAllocation = strictObject(
  {
    network: isNetworkName,
    containerId: isContainerId,
    ifName: isIfName,
    generation: isPositiveInt,
    nics: arrayOf((v) => isInfraPlan(v) || isDelegatedPlan(v)),
  },
  { dns: strictObject({}, { nameservers: isStrings, domain: isString, search: isStrings, options: isStrings }) },
);

const isPodRef = strictObject(
  {},
  { namespace: maxLength(253), name: maxLength(253), uid: maxLength(128), infraContainerId: maxLength(255) },
);
const isInterfaceRecord = strictObject(
  {
    containerId: isString,
    ifName: isIfName,
    endpointId: isString,
    nicType: oneOf('InfraNIC', 'DelegatedNIC'),
    network: isNetworkName,
    attachmentIfName: isIfName,
    netns: isString,
    pod: isPodRef,
    state: oneOf('allocated', 'committed'),
    generation: isInt,
    addresses: arrayOf(isAddress),
    routes: arrayOf(isRoute),
    createdAt: isString,
    updatedAt: isString,
  },
  {
    mac: isMac,
    containerIfIndex: isInt,
    hostVethName: isIfName,
    hostIfName: isIfName,
    deviceMac: isMac,
    adoptedAt: isString,
  },
);
const isEndpoint = strictObject({ containerId: isString, interfaces: arrayOf(isInterfaceRecord) });
const isReleaseResult = strictObject(
  { released: arrayOf(isInterfaceRecord) },
  { toTearDown: arrayOf(isInterfaceRecord) },
);

// The casts below are the point of these checks: each doc was just checked field by field against the
// schema's rules (answers.test.ts compares with the schema).

/** The allocation as AllocationSchema would return it, or undefined when the schema must decide. */
export function acceptAllocation(doc: unknown): Allocation | undefined {
  return isAllocation(doc) ? (doc as Allocation) : undefined;
}

/** The endpoint as EndpointSchema would return it, or undefined when the schema must decide. */
export function acceptEndpoint(doc: unknown): Endpoint | undefined {
  return isEndpoint(doc) ? (doc as Endpoint) : undefined;
}

/** The release's answer as ReleaseResultSchema would return it, or undefined when the schema must decide. */
export function acceptReleaseResult(doc: unknown): ReleaseResult | undefined {
  return isReleaseResult(doc) ? (doc as ReleaseResult) : undefined;
}
