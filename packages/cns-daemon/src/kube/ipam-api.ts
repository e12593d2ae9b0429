/**
 * ferryd's calls on its cluster IPAM objects (shared-types kube/ipam.ts; deploy/crds): claiming and
 * releasing IPBlocks and IPClaims, their status, the IPRanges the leader keeps, and informers of them.
 * Every claim is a create of the one name the object's content gives it, so the API server decides
 * between racing claimers (201 for one, 409 AlreadyExists for the others); every release names the
 * object by uid. Failures are KubeApiErrors (kube/api-error.ts): 'unavailable' is the API server away
 * (try again later), the rest say what the API server refused.
 */
import {
  ADDRESSES_RELEASED_FINALIZER,
  blockNameOf,
  claimNameOf,
  IPAM_GROUP,
  IPAM_PLURALS,
  IPAM_VERSION,
  type IPBlock,
  IPBlockSchema,
  type IPBlockSpec,
  type IPBlockStatus,
  type IPClaim,
  IPClaimSchema,
  type IPClaimSpec,
  type IPRange,
  IPRangeSchema,
  type IPRangeSpec,
  type IPRangeStatus,
  NETWORK_LABEL,
  NODE_LABEL,
  nodeOwnerReference,
  type OwnerReference,
  rangeNameOf,
} from '@ferry/shared-types/kube/ipam';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { KubeApiError } from './api-error';
import type { BackoffOptions } from './backoff';
import { ClusterCustomObjects, type Listed, type ReleaseOutcome } from './custom-objects';
import { ObjectCache } from './object-cache';

export type { Listed, ReleaseOutcome } from './custom-objects';

/** A claim's outcome: ours (201), or someone's (409 AlreadyExists; the object when the GET after it found one). */
export type CreateOutcome<T> = { created: T } | { exists: T | undefined };

/** A write that must not wait long: the ADD may be waiting on a claim. */
const DEFAULT_TIMEOUT_MS = 10_000;

export interface IpamApiOptions {
  kc: KubeConfig;
  /** The deadline of each call (default 10 s). */
  timeoutMs?: number;
}

/** Which objects a list selects, by their labels. */
export interface IpamSelector {
  node?: string;
  network?: string;
}

const ref = (kind: 'IPBlock' | 'IPClaim' | 'IPRange') => ({
  group: IPAM_GROUP,
  version: IPAM_VERSION,
  plural: IPAM_PLURALS[kind],
  kind,
});

function labelSelectorOf(selector: IpamSelector): string | undefined {
  const terms = [
    ...(selector.node ? [`${NODE_LABEL}=${selector.node}`] : []),
    ...(selector.network ? [`${NETWORK_LABEL}=${selector.network}`] : []),
  ];
  return terms.length > 0 ? terms.join(',') : undefined;
}

export class IpamApi {
  readonly #kc: KubeConfig;
  readonly #blocks: ClusterCustomObjects<IPBlock>;
  readonly #claims: ClusterCustomObjects<IPClaim>;
  readonly #ranges: ClusterCustomObjects<IPRange>;

  constructor(opts: IpamApiOptions) {
    const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#kc = opts.kc;
    this.#blocks = new ClusterCustomObjects(opts.kc, ref('IPBlock'), IPBlockSchema, timeoutMs);
    this.#claims = new ClusterCustomObjects(opts.kc, ref('IPClaim'), IPClaimSchema, timeoutMs);
    this.#ranges = new ClusterCustomObjects(opts.kc, ref('IPRange'), IPRangeSchema, timeoutMs);
  }

  // IPBlocks ------------------------------------------------------------------------------------------

  /**
   * Claims a block: creates its IPBlock (named blockNameOf(spec), labelled with node and network, owned
   * by the holder's Node `nodeUid`, with the addresses-released finalizer). RangeError for a CIDR that
   * is not a canonical block; KubeApiError for anything but 201 and 409 AlreadyExists.
   */
  createBlock(spec: IPBlockSpec, nodeUid: string): Promise<CreateOutcome<IPBlock>> {
    return createIfAbsent(this.#blocks, heldObject(blockNameOf(spec.network, spec.family, spec.cidr), spec, nodeUid));
  }

  getBlock(name: string): Promise<IPBlock | undefined> {
    return this.#blocks.get(name);
  }

  listBlocks(selector: IpamSelector = {}): Promise<Listed<IPBlock>> {
    return this.#blocks.list(labelSelectorOf(selector));
  }

  /** Replaces the block's status, at the resourceVersion `block` was read at ('conflict' when stale). */
  updateBlockStatus(block: IPBlock, status: IPBlockStatus): Promise<IPBlock> {
    return this.#blocks.replaceStatus(block.metadata.name, block.metadata.resourceVersion, status);
  }

  /** Gives the block back: deletes it (uid precondition) and removes the addresses-released finalizer. */
  releaseBlock(block: Pick<IPBlock, 'metadata'>): Promise<ReleaseOutcome> {
    return this.#blocks.release(block, ADDRESSES_RELEASED_FINALIZER);
  }

  // IPClaims ------------------------------------------------------------------------------------------

  /**
   * Claims a static address: creates its IPClaim (named claimNameOf(spec.address), labelled, owned by
   * the holder's Node, with the addresses-released finalizer, so the garbage collector cannot free it
   * while the pod may still hold the address). RangeError for a spec.address that is not an address.
   */
  createClaim(spec: IPClaimSpec, nodeUid: string): Promise<CreateOutcome<IPClaim>> {
    return createIfAbsent(this.#claims, heldObject(claimNameOf(spec.address), spec, nodeUid));
  }

  getClaim(name: string): Promise<IPClaim | undefined> {
    return this.#claims.get(name);
  }

  listClaims(selector: IpamSelector = {}): Promise<Listed<IPClaim>> {
    return this.#claims.list(labelSelectorOf(selector));
  }

  /** Gives the address back: deletes the claim (uid precondition) and removes the finalizer. */
  deleteClaim(claim: Pick<IPClaim, 'metadata'>): Promise<ReleaseOutcome> {
    return this.#claims.release(claim, ADDRESSES_RELEASED_FINALIZER);
  }

  // IPRanges ------------------------------------------------------------------------------------------

  getRange(network: string, family: IPRangeSpec['family']): Promise<IPRange | undefined> {
    return this.#ranges.get(rangeNameOf(network, family));
  }

  listRanges(): Promise<Listed<IPRange>> {
    return this.#ranges.list();
  }

  /**
   * The range's object with this spec: created when absent, its spec replaced (at the resourceVersion
   * read) when it differs. KubeApiError 'conflict' when another writer changed it in between.
   */
  async applyRange(spec: IPRangeSpec): Promise<IPRange> {
    const name = rangeNameOf(spec.network, spec.family);
    const current = await this.#ranges.get(name);
    if (!current) {
      const r = await createIfAbsent(this.#ranges, {
        metadata: { name, labels: { [NETWORK_LABEL]: spec.network } },
        spec,
      });
      if ('created' in r) return r.created;
      if (!r.exists)
        throw new KubeApiError('conflict', `create ipranges.ferry.dev ${name}: created and deleted by another writer`);
      return this.applyRange(spec);
    }
    const c = current.spec;
    const same =
      c.network === spec.network &&
      c.family === spec.family &&
      c.cidr === spec.cidr &&
      c.blockPrefixLength === spec.blockPrefixLength;
    return same ? current : this.#ranges.mergePatch(name, current.metadata.resourceVersion, { spec });
  }

  /** Replaces the range's status at the resourceVersion `range` was read at. */
  updateRangeStatus(range: IPRange, status: IPRangeStatus): Promise<IPRange> {
    return this.#ranges.replaceStatus(range.metadata.name, range.metadata.resourceVersion, status);
  }

  // Informers -----------------------------------------------------------------------------------------

  /** A list/watch of every IPBlock in the cluster (call start()). */
  blockCache(log: Logger, backoff?: BackoffOptions): ObjectCache<IPBlock> {
    return new ObjectCache({
      kc: this.#kc,
      objects: this.#blocks,
      schema: IPBlockSchema,
      log,
      ...(backoff ? { backoff } : {}),
    });
  }

  /** A list/watch of every IPClaim in the cluster (call start()). */
  claimCache(log: Logger, backoff?: BackoffOptions): ObjectCache<IPClaim> {
    return new ObjectCache({
      kc: this.#kc,
      objects: this.#claims,
      schema: IPClaimSchema,
      log,
      ...(backoff ? { backoff } : {}),
    });
  }
}

/** A node's block or claim: labelled with node and network, owned by the Node, held by the finalizer. */
function heldObject(name: string, spec: { node: string; network: string }, nodeUid: string): NewObject {
  return {
    metadata: {
      name,
      labels: { [NODE_LABEL]: spec.node, [NETWORK_LABEL]: spec.network },
      ownerReferences: [nodeOwnerReference(spec.node, nodeUid)],
      finalizers: [ADDRESSES_RELEASED_FINALIZER],
    },
    spec,
  };
}

/** POST; on 409 AlreadyExists a GET of the holder's object (undefined when it went in between). */
interface NewObject {
  metadata: { name: string; labels: Record<string, string>; ownerReferences?: OwnerReference[]; finalizers?: string[] };
  spec: object;
}

async function createIfAbsent<T extends IPBlock | IPClaim | IPRange>(
  objects: ClusterCustomObjects<T>,
  body: NewObject,
): Promise<CreateOutcome<T>> {
  try {
    return { created: await objects.create(body) };
  } catch (err) {
    if (!KubeApiError.is(err) || err.kind !== 'exists') throw err;
  }
  return { exists: await objects.get(body.metadata.name) };
}
