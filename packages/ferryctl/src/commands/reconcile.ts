import { ReconcileResultSchema } from '@ferry/shared-types/api/operator';
import type { Context } from '../context';

/** `reconcile`: run one reconcile pass now and say what it did. */
export async function cmdReconcile(ctx: Context): Promise<number> {
  const r = await ctx.client.call('POST', '/v1/operator/reconcile', ReconcileResultSchema);
  if (ctx.json) return ctx.print(JSON.stringify(r, null, 2));
  ctx.print(
    `cooled down: ${r.cooledDown} addresses; stale endpoints released: ${r.staleReleased}; ` +
      `devices refunded: ${r.devicesRefunded}, renamed home: ${r.devicesRenamed}; queued DELs applied: ${r.queueApplied}; ` +
      `adopted from the node: ${r.adopted}, released (host veth gone): ${r.adoptedReleased}; ` +
      `released after a reboot: ${r.releasedAfterReboot}`,
  );
  return 0;
}
