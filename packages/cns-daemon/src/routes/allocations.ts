import { type AllocateRequest, AllocateRequestSchema, AllocationSchema } from '@ferry/shared-types/api/allocations';
import { CniError, Code } from '@ferry/shared-types/errors';
import type { PodNics } from '@ferry/shared-types/kube/pod-nics';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Attachments } from '../attachments/attachments';
import type { DevicePlugin } from '../device-plugin/build';
import { CLAIM_TIMEOUT_MS, type StaticClaims } from '../ipam/claims/static-claims';
import { type RoomWaiter, withRoom } from '../ipam/room';
import type { Lifecycle } from '../lifecycle';
import type { Metrics } from '../metrics';
import type { PodServices } from '../pods/build';
import { podNicsOf } from '../pods/pod-intent';
import type { StorageHealth } from '../storage/health';
import type { GroupCommit } from '../store/group-commit';
import { errors } from './errors';

/**
 * POST /v1/allocations: the first step of ADD. Refused (code 11) unless ferryd is ready. With pods
 * watched, the pod's `ferry.dev/nics` decides its delegated NICs, and with the device plugin, the devices
 * the kubelet allocated to it (attachments/nic-choice.ts).
 */
export const allocationRoutes: FastifyPluginAsyncZod<{
  attachments: Attachments;
  writes: GroupCommit;
  lifecycle: Lifecycle;
  metrics: Metrics;
  storage: Pick<StorageHealth, 'errorOf'>;
  /** This node's pods, when ferryd watches them: the intent of the pod an ADD is for. */
  pods?: PodServices;
  /** The device plugin, when ferryd serves groups to the kubelet: what the kubelet allocated to the pod. */
  devicePlugin?: Pick<DevicePlugin, 'allocationOf'>;
  /** The block manager, when a pool is a range split into blocks: an ADD with no room waits for its claim. */
  blocks?: RoomWaiter & { poke(): void };
  /** Static addresses claimed cluster-wide, when cluster IPAM is on: held before the allocation. */
  claims?: Pick<StaticClaims, 'ensure'>;
}> = async (app, { attachments, writes, lifecycle, metrics, storage, pods, devicePlugin, blocks, claims }) => {
  /**
   * The journal's files that were there when an answer went out (other pods' entries, on a busy node),
   * promoted once it is on its way; one settle per turn of the event loop however many allocations it
   * answered (a burst of ADDs). Only those: an entry written after the answer (this pod's own, soon)
   * waits for the next request that reads attachments, whatever the timing, as before this settle existed.
   */
  const waiting = new Set<string>();
  const settleLater = (names: readonly string[]) => {
    if (names.length === 0) return;
    const scheduled = waiting.size > 0;
    for (const name of names) waiting.add(name);
    if (scheduled) return;
    setImmediate(() => {
      const batch = [...waiting];
      waiting.clear();
      try {
        attachments.settleJournal({ names: batch });
      } catch (err) {
        // Counted and reported by readiness; the next request settles again, before it reads.
        if (!storage.errorOf(err, 'allocate')) app.log.error({ err }, 'promoting commit-journal entries failed');
      }
    });
  };
  /**
   * The pod's annotation (from the pod cache; a pod the watch has not delivered is asked for, for at
   * most lookupTimeoutMs, then code 11) and the kubelet's allocation (its pod-resources API, bounded by
   * podResourcesTimeoutMs, then code 11) first, then the allocation, which refuses what the pod may not
   * have before anything is stored, and so before the shim builds anything.
   */
  /** The pod's static addresses, held cluster-wide before anything is stored (ipam/claims/static-claims.ts). */
  const claimStatics = async (nics: PodNics | undefined, body: AllocateRequest) => {
    const ns = body.pod?.namespace;
    const name = body.pod?.name;
    if (!claims || !nics || !ns || !name || !nics.some((n) => n.addresses)) return;
    const uid = pods?.cache.get(ns, name)?.uid ?? body.pod?.uid;
    if (uid) await claims.ensure({ namespace: ns, name, uid }, nics, CLAIM_TIMEOUT_MS);
  };
  const allocate = async (body: AllocateRequest) => {
    try {
      const [nics, allocated] = await Promise.all([podNicsOf(pods, body.pod), devicePlugin?.allocationOf(body.pod)]);
      await claimStatics(nics, body);
      // A repeated ADD of an attachment whose shim committed through the journal gets 105, as after a PUT.
      // Only this attachment's entry decides the allocation; the others' (the pods added before it, on a
      // busy node) wait until the answer has been written.
      attachments.settleJournal({ attachment: body });
      const result = await withRoom(blocks, () => writes.run(() => attachments.allocate(body, nics, allocated)));
      // The block manager counts again soon (off this answer's path): a claim ahead of demand.
      blocks?.poke();
      if (nics && body.pod?.namespace && body.pod.name) pods?.refusals.clear(body.pod.namespace, body.pod.name);
      return result;
    } catch (err) {
      pods?.refusals.note(body.pod, err);
      throw err;
    }
  };
  app.post(
    '/v1/allocations',
    {
      config: { operation: 'allocate' },
      schema: {
        summary: 'Allocate addresses and the NIC plan for one attachment (idempotent)',
        body: AllocateRequestSchema,
        response: { 200: AllocationSchema, ...errors },
      },
    },
    async (req) => {
      if (!lifecycle.isReady) {
        throw new CniError(Code.TryAgainLater, `ferryd is ${lifecycle.phase}: try again later`);
      }
      const { plan, created } = await allocate(req.body);
      if (created) metrics.allocations.inc({ network: plan.network });
      req.log.info(
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
      settleLater(attachments.waitingInJournal());
      return plan;
    },
  );
};
