/**
 * ferryd's half of ADD (POST /v1/allocations; the shim's half is cni-shim's commands/add.ts), in the
 * order it runs:
 *
 * 1. refused (code 11) unless ferryd is ready;
 * 2. the pod's intent and the kubelet's allocation, asked together, before any transaction: the pod's
 *    `ferry.dev/nics` annotation (the pod cache; a pod the watch has not delivered is asked for, for at
 *    most lookupTimeoutMs, then code 11) and the devices the kubelet allocated to it (its pod-resources
 *    API, bounded by podResourcesTimeoutMs, then code 11);
 *    with cluster IPAM, the pod's static addresses held cluster-wide (ipam/claims/static-claims.ts: 116 when
 *    another pod holds one, 11 when the API server does not answer in time);
 * 3. this attachment's commit-journal entry settled, so a repeated ADD of an attachment whose shim
 *    committed through the journal gets 105, as after a PUT;
 * 4. the allocation in the next group transaction (store/group-commit.ts), which refuses what the pod may
 *    not have before anything is stored (attachments/nic-choice.ts), and so before the shim builds anything;
 *    with cluster IPAM, an allocation that finds the node's blocks full waits for the claim it causes and
 *    runs again (ipam/room.ts), and the block manager is told to count again (a claim ahead of demand);
 * 5. the pod's refusal remembered when its NICs were refused, forgotten when an ADD of it succeeds;
 * 6. counted and logged; the journal's other entries settled once the answer is on its way.
 */
import type { AllocateRequest, Allocation } from '@ferry/shared-types/api/allocations';
import type { PodRef } from '@ferry/shared-types/api/common';
import { CniError, Code } from '@ferry/shared-types/errors';
import type { PodNics } from '@ferry/shared-types/kube/pod-nics';
import type { Logger } from 'pino';
import type { Attachments } from '../attachments/attachments';
import type { DevicePlugin } from '../device-plugin/build';
import { CLAIM_TIMEOUT_MS, type StaticClaims } from '../ipam/claims/static-claims';
import { type RoomWaiter, withRoom } from '../ipam/room';
import type { Lifecycle } from '../lifecycle';
import type { Metrics } from '../metrics';
import type { PodServices } from '../pods/build';
import type { StorageHealth } from '../storage/health';
import type { GroupCommit } from '../store/group-commit';

export interface AllocateDeps {
  attachments: Attachments;
  writes: GroupCommit;
  lifecycle: Lifecycle;
  metrics: Pick<Metrics, 'allocations'>;
  storage: Pick<StorageHealth, 'errorOf'>;
  /** Where a failed settle of the journal's other entries is logged (it answers no request). */
  log: Pick<Logger, 'error'>;
  /** This node's pods, when ferryd watches them: the intent of the pod an ADD is for. */
  pods?: Pick<PodServices, 'podIntent' | 'refusals'>;
  /** The device plugin, when ferryd serves groups to the kubelet: what the kubelet allocated to the pod. */
  devicePlugin?: Pick<DevicePlugin, 'allocationOf'>;
  /** The block manager, when a pool is a range split into blocks: an ADD with no room waits for its claim. */
  blocks?: RoomWaiter & { poke(): void };
  /** Static addresses claimed cluster-wide, when cluster IPAM is on: held before the allocation. */
  claims?: Pick<StaticClaims, 'ensure'>;
}

export class Allocate {
  readonly #deps: AllocateDeps;
  /** The journal's files waiting for the settle scheduled after the answers that saw them. */
  readonly #waiting = new Set<string>();

  constructor(deps: AllocateDeps) {
    this.#deps = deps;
  }

  /** The plan for `req`'s attachment (idempotent until commit); `log` is the request's. */
  async allocate(req: AllocateRequest, log: Pick<Logger, 'info'>): Promise<Allocation> {
    const { lifecycle, attachments, metrics } = this.#deps;
    if (!lifecycle.isReady) throw new CniError(Code.TryAgainLater, `ferryd is ${lifecycle.phase}: try again later`);
    const { plan, created } = await this.#allocate(req);
    if (created) metrics.allocations.inc({ network: plan.network });
    log.info(
      {
        containerId: plan.containerId,
        ifName: plan.ifName,
        network: plan.network,
        generation: plan.generation,
        created,
        addresses: plan.nics.flatMap((n) => n.addresses.map((a) => a.address)),
      },
      'allocated',
    );
    this.#settleLater(attachments.waitingInJournal());
    return plan;
  }

  async #allocate(req: AllocateRequest): Promise<{ plan: Allocation; created: boolean }> {
    const { attachments, writes, pods, devicePlugin, blocks, claims } = this.#deps;
    try {
      const [intent, allocated] = await Promise.all([this.#intentOf(req.pod), devicePlugin?.allocationOf(req.pod)]);
      const nics = intent?.nics;
      const { namespace, name } = req.pod ?? {};
      if (claims && intent && nics?.some((n) => n.addresses) && namespace && name)
        await claims.ensure({ namespace, name, uid: intent.uid }, nics, CLAIM_TIMEOUT_MS);
      // Only this attachment's entry decides the allocation; the others' (the pods added before it, on a
      // busy node) wait until the answer has been written.
      attachments.settleJournal({ attachment: req });
      const result = await withRoom(blocks, () => writes.run(() => attachments.allocate(req, nics, allocated)));
      // Off this answer's path: the block manager counts again soon.
      blocks?.poke();
      if (nics && req.pod?.namespace && req.pod.name) pods?.refusals.clear(req.pod.namespace, req.pod.name);
      return result;
    } catch (err) {
      pods?.refusals.note(req.pod, err);
      throw err;
    }
  }

  /**
   * The annotation of the pod an ADD is for (`pod`, from the runtime's K8S_POD_* args) and the pod's uid,
   * when ferryd watches pods and the API server has that pod; undefined otherwise (the conflist decides).
   */
  async #intentOf(pod: PodRef | undefined): Promise<{ nics: PodNics | undefined; uid: string } | undefined> {
    const { pods } = this.#deps;
    if (!pods || !pod?.namespace || !pod.name) return undefined;
    const intent = await pods.podIntent({
      namespace: pod.namespace,
      name: pod.name,
      ...(pod.uid ? { uid: pod.uid } : {}),
    });
    return intent.kind === 'pod' ? { nics: intent.nics, uid: intent.pod.uid } : undefined;
  }

  /**
   * The journal's files that were there when an answer went out (other pods' entries, on a busy node),
   * promoted once it is on its way; one settle per turn of the event loop however many allocations it
   * answered (a burst of ADDs). Only those: an entry written after the answer (this pod's own, soon)
   * waits for the next request that reads attachments, whatever the timing.
   */
  #settleLater(names: readonly string[]): void {
    if (names.length === 0) return;
    const scheduled = this.#waiting.size > 0;
    for (const name of names) this.#waiting.add(name);
    if (scheduled) return;
    setImmediate(() => {
      const batch = [...this.#waiting];
      this.#waiting.clear();
      try {
        this.#deps.attachments.settleJournal({ names: batch });
      } catch (err) {
        // Counted and reported by readiness; the next request settles again, before it reads.
        if (!this.#deps.storage.errorOf(err, 'allocate'))
          this.#deps.log.error({ err }, 'promoting commit-journal entries failed');
      }
    });
  }
}
