import { AllocateRequestSchema, AllocationSchema } from '@ferry/shared-types/api/allocations';
import { CniError, Code } from '@ferry/shared-types/errors';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Attachments } from '../endpoints/attachments';
import type { Lifecycle } from '../lifecycle';
import type { Metrics } from '../metrics';
import type { StorageHealth } from '../storage/health';
import type { GroupCommit } from '../store/group-commit';
import { errors } from './errors';

/** POST /v1/allocations: the first step of ADD. Refused (code 11) unless ferryd is ready. */
export const allocationRoutes: FastifyPluginAsyncZod<{
  attachments: Attachments;
  writes: GroupCommit;
  lifecycle: Lifecycle;
  metrics: Metrics;
  storage: Pick<StorageHealth, 'errorOf'>;
}> = async (app, { attachments, writes, lifecycle, metrics, storage }) => {
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
      // A repeated ADD of an attachment whose shim committed through the journal gets 105, as after a PUT.
      // Only this attachment's entry decides the allocation; the others' (the pods added before it, on a
      // busy node) wait until the answer has been written.
      attachments.settleJournal({ attachment: req.body });
      const { plan, created } = await writes.run(() => attachments.allocate(req.body));
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
