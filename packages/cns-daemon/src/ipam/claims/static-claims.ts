/**
 * Static addresses (a pod's `ferry.dev/nics` `addresses`) claimed cluster-wide, one IPClaim per address
 * (its name is the address's: a claim is a create-if-absent, the API server lets one pod anywhere have it):
 *
 * - ahead, from the pod watch: a pod bound to this node whose annotation names static addresses its
 *   namespace may have gets their claims before its ADD;
 * - at the ADD, for a claim not yet held: one bounded round trip (code 11 when the API server does not
 *   answer in time); an address another pod holds is refused (116), naming that pod and its node;
 * - given back once no attachment of the pod holds it and the pod no longer asks for it (gone, another
 *   uid, the annotation changed): marked `releasing` in the store, deleted (uid precondition), retried
 *   until the API server has answered, across restarts.
 *
 * An address the namespace may not have is never claimed: the allocation refuses it (tenancy), and a
 * tenant's annotation cannot take another tenant's address away by claiming it first.
 */
import type { PodRef } from '@ferry/shared-types/api/common';
import { CniError, Code } from '@ferry/shared-types/errors';
import { POD_NICS_ANNOTATION, type PodNics, parsePodNics } from '@ferry/shared-types/kube/pod-nics';
import type { Logger } from 'pino';
import type { PodView } from '../../pods/pod';
import type { BlockStore, StaticClaimRow } from '../../store/blocks';
import { canonicalAddress } from '../cidr';

/** One claim as the API server holds it: the fields that decide. */
export interface ClusterClaim {
  name: string;
  uid: string;
  address: string;
  node: string;
  pod: { namespace: string; name: string; uid: string };
}

export interface ClaimSpec {
  address: string;
  node: string;
  network: string;
  ifName: string;
  pod: { namespace: string; name: string; uid: string };
}

export interface ClaimApi {
  /** Create-if-absent of the address's one name; 409 AlreadyExists → exists. Throws when the API server is away. */
  createClaim(spec: ClaimSpec): Promise<{ created: ClusterClaim } | { exists: ClusterClaim | undefined }>;
  /** Deletes the claim (uid precondition) and removes the finalizer. */
  deleteClaim(claim: { name: string; uid: string }): Promise<'released' | 'gone' | 'conflict'>;
}

export interface StaticClaimsDeps {
  nodeName: string;
  api: ClaimApi;
  store: BlockStore;
  /** Whether `namespace` may give its pods this address (tenancy.ts); a refused one is never claimed. */
  mayHave(address: string, namespace: string): boolean;
  /** The pods of this node (the pod cache) and whether the first list is in. */
  pods(): { synced: boolean; get(namespace: string, name: string): PodView | undefined };
  /** The static addresses each pod's interfaces hold (`namespace/name` → addresses without prefix). */
  heldByPods(): ReadonlyMap<string, ReadonlySet<string>>;
  /** The network an annotation entry without `network` is on (the primary's). */
  primaryNetwork: string;
  log: Logger;
  now: () => number;
}

/** An ADD that waits for a claim waits at most this long (then code 11). */
export const CLAIM_TIMEOUT_MS = 3000;

export class StaticClaims {
  readonly #deps: StaticClaimsDeps;
  readonly #inflight = new Map<string, Promise<void>>();

  constructor(deps: StaticClaimsDeps) {
    this.#deps = deps;
  }

  /**
   * Every static address of `nics` the pod's namespace may have is held by this pod cluster-wide when this
   * resolves. CniError 116 when another pod holds one (named with its node), 11 when the API server does not
   * answer within `timeoutMs`.
   */
  async ensure(
    pod: Required<Pick<PodRef, 'namespace' | 'name' | 'uid'>>,
    nics: PodNics,
    timeoutMs: number,
  ): Promise<void> {
    const wanted = nics.flatMap((nic, i) =>
      (nic.addresses ?? []).map((cidr, j) => ({
        address: addressOf(cidr),
        field: `[${i}].addresses[${j}]`,
        network: nic.network ?? this.#deps.primaryNetwork,
        ifName: nic.ifName ?? 'net1',
      })),
    );
    const deadline = this.#deps.now() + timeoutMs;
    for (const w of wanted) {
      if (!this.#deps.mayHave(w.address, pod.namespace)) continue;
      const row = this.#deps.store.claimAt(w.address);
      if (row?.state === 'held' && row.pod_uid === pod.uid) continue;
      const who = `pod ${pod.namespace}/${pod.name}: annotation ${POD_NICS_ANNOTATION}: ${w.field}`;
      if (row && row.pod_uid !== pod.uid && row.state === 'held')
        throw heldBy(who, w.address, row.pod_namespace, row.pod_name, this.#deps.nodeName);
      if (row?.state === 'releasing')
        throw new CniError(
          Code.TryAgainLater,
          `${who}: ${w.address} is being given back by an earlier pod; try again later`,
        );
      const key = `${w.address}/${pod.uid}`;
      let claim = this.#inflight.get(key);
      if (!claim) {
        claim = this.#claim(w, pod, who).finally(() => this.#inflight.delete(key));
        this.#inflight.set(key, claim);
      }
      await withDeadline(claim, deadline - this.#deps.now(), who, w.address);
    }
  }

  /** Claims ahead for a pod the watch delivered (errors are logged: its ADD will say them). */
  preClaim(pod: PodView, nics: PodNics | undefined): void {
    if (!nics?.some((n) => n.addresses) || pod.needsNoAddress) return;
    this.ensure(pod, nics, CLAIM_TIMEOUT_MS * 10).catch((err: unknown) => {
      this.#deps.log.info(
        { pod: `${pod.namespace}/${pod.name}`, problem: (err as Error).message },
        'static address not claimed ahead of the ADD',
      );
    });
  }

  /** Gives back the claims no pod of this node holds or asks for any more, and retries earlier releases. */
  async release(): Promise<void> {
    const pods = this.#deps.pods();
    // Before the first list, a pod missing from the cache is not a pod gone.
    if (!pods.synced) return;
    const held = this.#deps.heldByPods();
    for (const row of this.#deps.store.claims()) {
      if (row.state === 'held' && this.#isStillWanted(row, pods.get(row.pod_namespace, row.pod_name), held)) continue;
      if (row.state === 'held') this.#deps.store.markClaimReleasing(row.address);
      const outcome = await this.#deps.api.deleteClaim({ name: row.name, uid: row.uid });
      this.#deps.store.forgetClaim(row.address, row.uid);
      this.#deps.log.info({ address: row.address, claim: row.name, outcome }, 'static address given back');
    }
  }

  #isStillWanted(
    row: StaticClaimRow,
    pod: PodView | undefined,
    held: ReadonlyMap<string, ReadonlySet<string>>,
  ): boolean {
    if (held.get(`${row.pod_namespace}/${row.pod_name}`)?.has(row.address)) return true;
    if (!pod || pod.uid !== row.pod_uid || pod.needsNoAddress) return false;
    const text = pod.annotations[POD_NICS_ANNOTATION];
    const asked = text === undefined ? undefined : parsePodNics(text);
    if (!asked || 'problem' in asked) return false;
    return asked.nics.some((n) => (n.addresses ?? []).some((a) => addressOf(a) === row.address));
  }

  async #claim(
    w: { address: string; network: string; ifName: string },
    pod: { namespace: string; name: string; uid: string },
    who: string,
  ): Promise<void> {
    const { api, store, nodeName, now, log } = this.#deps;
    const r = await api.createClaim({
      address: w.address,
      node: nodeName,
      network: w.network,
      ifName: w.ifName,
      pod: { namespace: pod.namespace, name: pod.name, uid: pod.uid },
    });
    const claim = 'created' in r ? r.created : r.exists;
    if (!claim)
      throw new CniError(Code.TryAgainLater, `${who}: ${w.address} was claimed and given back meanwhile; try again`);
    if (claim.pod.uid !== pod.uid) throw heldBy(who, w.address, claim.pod.namespace, claim.pod.name, claim.node);
    store.holdClaim({
      address: w.address,
      name: claim.name,
      uid: claim.uid,
      podNamespace: pod.namespace,
      podName: pod.name,
      podUid: pod.uid,
      nowMs: now(),
    });
    if ('created' in r) log.info({ address: w.address, pod: `${pod.namespace}/${pod.name}` }, 'static address claimed');
  }
}

/** An annotation's `a.b.c.d/len` as the address alone, in the kernel's spelling (the claim's name is of it). */
export const addressOf = (cidr: string): string => canonicalAddress(cidr.slice(0, cidr.lastIndexOf('/')));

function heldBy(who: string, address: string, namespace: string, name: string, node: string): CniError {
  return new CniError(Code.InvalidPodIntent, `${who}: ${address} is held by pod ${namespace}/${name} on node ${node}`);
}

/** The claim, or code 11 once `ms` have passed (the claim goes on and is kept if it succeeds). */
async function withDeadline(claim: Promise<void>, ms: number, who: string, address: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new CniError(
            Code.TryAgainLater,
            `${who}: claim ${address}: the Kubernetes API did not answer in time; try again later`,
          ),
        ),
      Math.max(0, ms),
    );
  });
  try {
    await Promise.race([claim, late]);
  } catch (err) {
    if (err instanceof CniError) throw err;
    throw new CniError(Code.TryAgainLater, `${who}: claim ${address}: ${(err as Error).message}; try again later`, '', {
      cause: err,
    });
  } finally {
    clearTimeout(timer);
  }
}
