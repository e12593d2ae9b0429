/**
 * Ferry's cluster IPAM objects in the Kubernetes API (deploy/crds, docs/architecture.md "Cluster IPAM"):
 * IPBlock (one block of a network's range, held by one node), IPClaim (one static address, claimed
 * cluster-wide) and IPRange (a range's use, written by the leader), as ferryd reads them: every object
 * from the API server is parsed with these schemas, so a hand-edited object is a problem named, never
 * a crash. The names are derived from what the object is (a block's CIDR, a claim's address), which is
 * what makes a claim a create-if-absent: two nodes claiming one block POST one name, and the API server
 * answers one of them 409 AlreadyExists.
 */
import * as z from 'zod/mini';
import { type Family, FamilySchema } from '../api/common';
import { IfNameSchema, NetworkNameSchema } from '../cni/names';

/** The API group and version of Ferry's custom resources. */
export const IPAM_GROUP = 'ferry.dev';
export const IPAM_VERSION = 'v1alpha1';
export const IPAM_API_VERSION = `${IPAM_GROUP}/${IPAM_VERSION}`;
/** The resources' plurals (URL paths and RBAC rules say these). */
export const IPAM_PLURALS = { IPBlock: 'ipblocks', IPClaim: 'ipclaims', IPRange: 'ipranges' } as const;
export type IpamKind = keyof typeof IPAM_PLURALS;

/** Labels on IPBlocks and IPClaims: the holder Node and the network, for label-selected lists. */
export const NODE_LABEL = 'ferry.dev/node';
export const NETWORK_LABEL = 'ferry.dev/network';
/**
 * The finalizer on every IPBlock (and IPClaim): the object stays, marked for deletion, until no pod can
 * hold an address from it. Only the holder releasing an empty block, or the reclaimer once the node's
 * pods are gone, removes it.
 */
export const ADDRESSES_RELEASED_FINALIZER = 'ferry.dev/addresses-released';

/** The Lease the one cluster-wide IPAM job (the reclaimer) runs under. */
export const RECLAIMER_LEASE = { namespace: 'ferry-system', name: 'ferry-ipam-reclaimer' } as const;

/** Condition types: an IPBlock's `Valid` and `Releasing`; an IPRange's `Exhausted` and `NearlyExhausted`. */
export const BlockCondition = { Valid: 'Valid', Releasing: 'Releasing' } as const;
export const RangeCondition = { Exhausted: 'Exhausted', NearlyExhausted: 'NearlyExhausted' } as const;
/** Why an IPBlock is not Valid (the condition's reason). */
export const InvalidBlockReason = {
  /** The name is not blockNameOf(spec): not the one name two claimers of this block would both use. */
  NameMismatch: 'NameMismatch',
  /** The CIDR has host bits set, or is not of spec.family. */
  Misaligned: 'Misaligned',
  /** Not inside the network's range, or not of the range's block size. */
  OutsideRange: 'OutsideRange',
  /** Overlaps another node's block. */
  Overlap: 'Overlap',
} as const;
export type InvalidBlockReason = (typeof InvalidBlockReason)[keyof typeof InvalidBlockReason];

// ---------------------------------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------------------------------

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** A Kubernetes object name (a DNS-1123 subdomain): Node names, the objects' own names. */
export const ObjectNameSchema = z
  .string()
  .check(z.minLength(1), z.maxLength(253), z.regex(DNS_SUBDOMAIN, 'must be a lowercase RFC 1123 subdomain'));

/** An owner reference (metadata.ownerReferences[]): IPBlocks name their holder's Node. */
export const OwnerReferenceSchema = z.object({
  apiVersion: z.string(),
  kind: z.string(),
  name: z.string(),
  uid: z.string(),
  controller: z.optional(z.boolean()),
  blockOwnerDeletion: z.optional(z.boolean()),
});
export type OwnerReference = z.infer<typeof OwnerReferenceSchema>;

/** The ObjectMeta fields ferryd reads (others, such as managedFields, are dropped). */
export const ObjectMetaSchema = z.object({
  name: ObjectNameSchema,
  uid: z.string().check(z.minLength(1)),
  resourceVersion: z.string().check(z.minLength(1)),
  generation: z.optional(z.number()),
  creationTimestamp: z.optional(z.string()),
  /** Set once the object is marked for deletion (its finalizers hold it). */
  deletionTimestamp: z.optional(z.string()),
  labels: z.optional(z.record(z.string(), z.string())),
  finalizers: z.optional(z.array(z.string())),
  ownerReferences: z.optional(z.array(OwnerReferenceSchema)),
});
export type ObjectMeta = z.infer<typeof ObjectMetaSchema>;

/** A status condition (metav1.Condition). */
export const ConditionSchema = z.object({
  type: z.string().check(z.minLength(1), z.maxLength(316)),
  status: z.enum(['True', 'False', 'Unknown']),
  reason: z.string().check(z.minLength(1), z.maxLength(1024)),
  message: z.string().check(z.maxLength(32768)),
  lastTransitionTime: z.string(),
  observedGeneration: z.optional(z.number()),
});
export type Condition = z.infer<typeof ConditionSchema>;

const CidrSchema = z.union([z.cidrv4(), z.cidrv6()]);
const Count = () => z.int().check(z.nonnegative());

/** Which block, and who holds it. Immutable after create (the CRD's rule; ferryd checks too). */
export const IPBlockSpecSchema = z.object({
  network: NetworkNameSchema,
  family: FamilySchema,
  /** The block, host bits zero: `10.244.3.0/26`, `fd00:10:244::40/122`. */
  cidr: CidrSchema,
  /** The Node holding the block. */
  node: ObjectNameSchema,
});
export type IPBlockSpec = z.infer<typeof IPBlockSpecSchema>;

export const IPBlockStatusSchema = z.object({
  /** Addresses of the block assigned to pods, as the holder last wrote it (throttled). */
  assigned: z.optional(Count()),
  observedGeneration: z.optional(z.number()),
  conditions: z.optional(z.array(ConditionSchema)),
});
export type IPBlockStatus = z.infer<typeof IPBlockStatusSchema>;

export const IPBlockSchema = z.object({
  apiVersion: z.literal(IPAM_API_VERSION),
  kind: z.literal('IPBlock'),
  metadata: ObjectMetaSchema,
  spec: IPBlockSpecSchema,
  status: z.optional(IPBlockStatusSchema),
});
export type IPBlock = z.infer<typeof IPBlockSchema>;

/** The pod holding a static address. */
export const ClaimPodSchema = z.object({
  namespace: z.string().check(z.minLength(1), z.maxLength(63)),
  name: z.string().check(z.minLength(1), z.maxLength(253)),
  uid: z.string().check(z.minLength(1), z.maxLength(128)),
});
export type ClaimPod = z.infer<typeof ClaimPodSchema>;

/** One static address and who holds it. Immutable after create. */
export const IPClaimSpecSchema = z.object({
  /** The address, without a prefix length. */
  address: z.union([z.ipv4(), z.ipv6()]),
  node: ObjectNameSchema,
  /** The ferryd network of the attachment the address is on. */
  network: NetworkNameSchema,
  ifName: IfNameSchema,
  pod: ClaimPodSchema,
});
export type IPClaimSpec = z.infer<typeof IPClaimSpecSchema>;

export const IPClaimStatusSchema = z.object({
  observedGeneration: z.optional(z.number()),
  conditions: z.optional(z.array(ConditionSchema)),
});

export const IPClaimSchema = z.object({
  apiVersion: z.literal(IPAM_API_VERSION),
  kind: z.literal('IPClaim'),
  metadata: ObjectMetaSchema,
  spec: IPClaimSpecSchema,
  status: z.optional(IPClaimStatusSchema),
});
export type IPClaim = z.infer<typeof IPClaimSchema>;

/** A network's cluster-wide range in one family. */
export const IPRangeSpecSchema = z.object({
  network: NetworkNameSchema,
  family: FamilySchema,
  cidr: CidrSchema,
  blockPrefixLength: z.int().check(z.minimum(0), z.maximum(128)),
});
export type IPRangeSpec = z.infer<typeof IPRangeSpecSchema>;

/** The range's use, as the leader last counted it from the IPBlocks. */
export const IPRangeStatusSchema = z.object({
  observedGeneration: z.optional(z.number()),
  /** Blocks the range has room for. */
  blocksTotal: z.optional(Count()),
  /** Blocks held and not being released. */
  blocksHeld: z.optional(Count()),
  blocksFree: z.optional(Count()),
  /** Blocks marked for deletion whose finalizer is still on. */
  blocksReleasing: z.optional(Count()),
  /** The sum of the held blocks' status.assigned. */
  addressesAssigned: z.optional(Count()),
  /** Nodes holding at least one block. */
  nodes: z.optional(Count()),
  conditions: z.optional(z.array(ConditionSchema)),
});
export type IPRangeStatus = z.infer<typeof IPRangeStatusSchema>;

export const IPRangeSchema = z.object({
  apiVersion: z.literal(IPAM_API_VERSION),
  kind: z.literal('IPRange'),
  metadata: ObjectMetaSchema,
  spec: IPRangeSpecSchema,
  status: z.optional(IPRangeStatusSchema),
});
export type IPRange = z.infer<typeof IPRangeSchema>;

/** The schema of each kind, for code that handles all three alike. */
export const IPAM_SCHEMAS = { IPBlock: IPBlockSchema, IPClaim: IPClaimSchema, IPRange: IPRangeSchema } as const;
export type IpamObject<K extends IpamKind> = z.infer<(typeof IPAM_SCHEMAS)[K]>;

// ---------------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------------

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** FNV-1a (32 bit) of the UTF-8 bytes, as 8 hex digits: short, stable, and needs no crypto module. */
function fnv1a32(text: string): string {
  let h = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) {
    h ^= byte;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, '0');
}

/**
 * The network's part of an object name. A network name that is a DNS label is used as it is. Any
 * other (upper case, `_`, `.`, longer than 63) becomes a readable label from it plus a hash of the
 * exact name as a second label: one more label than any DNS-safe network's part has, so the two kinds
 * can never give the same name.
 */
export function networkNamePart(network: string): string {
  if (DNS_LABEL.test(network)) return network;
  const readable = network
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
    .replace(/-+$/, '');
  return `${readable || 'net'}.${fnv1a32(network)}`;
}

/** An address as a number and its family; undefined when `text` is not one. */
function parseAddress(text: string): { family: Family; value: bigint } | undefined {
  if (text.includes(':')) {
    const value = parseIPv6(text);
    return value === undefined ? undefined : { family: 6, value };
  }
  const value = parseIPv4(text);
  return value === undefined ? undefined : { family: 4, value };
}

function parseIPv4(text: string): bigint | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let value = 0n;
  for (const p of parts) {
    if (!/^(0|[1-9][0-9]{0,2})$/.test(p) || Number(p) > 255) return undefined;
    value = (value << 8n) | BigInt(p);
  }
  return value;
}

function parseIPv6(text: string): bigint | undefined {
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const groupsOf = (s: string): number[] | undefined => {
    if (s === '') return [];
    const out: number[] = [];
    const parts = s.split(':');
    for (const [i, p] of parts.entries()) {
      if (i === parts.length - 1 && p.includes('.')) {
        const v4 = parseIPv4(p);
        if (v4 === undefined) return undefined;
        out.push(Number(v4 >> 16n), Number(v4 & 0xffffn));
      } else if (/^[0-9a-fA-F]{1,4}$/.test(p)) out.push(Number.parseInt(p, 16));
      else return undefined;
    }
    return out;
  };
  const head = groupsOf(halves[0] ?? '');
  const tail = halves.length === 2 ? groupsOf(halves[1] ?? '') : [];
  if (!head || !tail) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  let value = 0n;
  for (const g of [...head, ...Array<number>(missing).fill(0), ...tail]) value = (value << 16n) | BigInt(g);
  return value;
}

const BITS: Record<Family, number> = { 4: 32, 6: 128 };

/** The address's part of an object name: `10-244-3-0`, or the eight 4-digit hex groups of IPv6. */
function addressNamePart(family: Family, value: bigint): string {
  if (family === 4) return [24n, 16n, 8n, 0n].map((s) => String((value >> s) & 0xffn)).join('-');
  return Array.from({ length: 8 }, (_, i) =>
    ((value >> BigInt(112 - 16 * i)) & 0xffffn).toString(16).padStart(4, '0'),
  ).join('-');
}

/**
 * Parses a block CIDR: its family, base and prefix length; a problem (host bits set, not of the
 * expected family, unreadable) otherwise.
 */
export function parseBlockCidr(
  cidr: string,
  family?: Family,
): { family: Family; base: bigint; prefixLength: number } | { problem: string } {
  const [addr, len, ...rest] = cidr.split('/');
  const parsed = addr === undefined ? undefined : parseAddress(addr);
  if (!parsed || rest.length > 0 || len === undefined || !/^(0|[1-9][0-9]{0,2})$/.test(len)) {
    return { problem: `${cidr} is not a CIDR` };
  }
  const prefixLength = Number(len);
  const bits = BITS[parsed.family];
  if (prefixLength > bits) return { problem: `${cidr}: prefix length above ${bits}` };
  if (family !== undefined && parsed.family !== family) return { problem: `${cidr} is not an IPv${family} CIDR` };
  const hostMask = (1n << BigInt(bits - prefixLength)) - 1n;
  if ((parsed.value & hostMask) !== 0n) return { problem: `${cidr} has host bits set` };
  return { family: parsed.family, base: parsed.value, prefixLength };
}

/**
 * The one IPBlock name of a block: `<network>.v4.10-244-3-0-26`, `<network>.v6.fd00-0010-…-0040-122`
 * (IPv6 fully expanded, so every spelling of one CIDR gives one name). A DNS-1123 subdomain for every
 * valid network name. Throws RangeError when `cidr` is not a canonical block of `family`.
 */
export function blockNameOf(network: string, family: Family, cidr: string): string {
  const b = parseBlockCidr(cidr, family);
  if ('problem' in b) throw new RangeError(`name the block of ${network}: ${b.problem}`);
  return `${networkNamePart(network)}.v${family}.${addressNamePart(family, b.base)}-${b.prefixLength}`;
}

/**
 * The one IPClaim name of a static address: `v4.198-51-100-5`, `v6.fd00-0050-0000-…-0005`. Derived from
 * the address alone: one address is claimed once in the whole cluster, whichever network asks. Throws
 * RangeError when `address` is not an address.
 */
export function claimNameOf(address: string): string {
  const a = parseAddress(address);
  if (!a) throw new RangeError(`name the claim of ${address}: not an IPv4 or IPv6 address`);
  return `v${a.family}.${addressNamePart(a.family, a.value)}`;
}

/** The IPRange name of a network's range in one family: `<network>.v4`. */
export function rangeNameOf(network: string, family: Family): string {
  return `${networkNamePart(network)}.v${family}`;
}

/** The owner reference an IPBlock carries to its holder's Node, so the garbage collector marks it when the Node goes. */
export function nodeOwnerReference(node: string, nodeUid: string): OwnerReference {
  return { apiVersion: 'v1', kind: 'Node', name: node, uid: nodeUid };
}

/**
 * Why an IPBlock cannot be used as it is, from the object alone (a hand-edited one): its CIDR is not a
 * canonical block of its family (Misaligned) or its name is not blockNameOf(spec) (NameMismatch).
 * undefined when neither. OutsideRange and Overlap need the range and the other blocks: the holder's
 * checks.
 */
export function blockProblemOf(block: IPBlock): { reason: InvalidBlockReason; message: string } | undefined {
  const { network, family, cidr } = block.spec;
  const b = parseBlockCidr(cidr, family);
  if ('problem' in b) return { reason: InvalidBlockReason.Misaligned, message: b.problem };
  const want = blockNameOf(network, family, cidr);
  if (block.metadata.name !== want) {
    return {
      reason: InvalidBlockReason.NameMismatch,
      message: `the IPBlock of ${network} ${cidr} must be named ${want}, not ${block.metadata.name}`,
    };
  }
  return undefined;
}

/** Why an IPClaim cannot be used as it is: its name is not claimNameOf(spec.address). */
export function claimProblemOf(claim: IPClaim): string | undefined {
  const want = claimNameOf(claim.spec.address);
  return claim.metadata.name === want
    ? undefined
    : `the IPClaim of ${claim.spec.address} must be named ${want}, not ${claim.metadata.name}`;
}
