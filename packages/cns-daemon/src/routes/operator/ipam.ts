import {
  AddressListQuerySchema,
  AddressListSchema,
  InvariantReportSchema,
  OperatorGcRequestSchema,
  OperatorGcResultSchema,
  PoolListSchema,
  ReconcileResultSchema,
} from '@ferry/shared-types/api/operator';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Operator } from '../../operator';
import { errors } from '../errors';

/** Pool usage, per-address state, reconcile-now, the invariant check and operator GC. */
export const operatorIpamRoutes: FastifyPluginAsyncZod<{ operator: Operator }> = async (app, { operator }) => {
  app.get(
    '/v1/operator/pools',
    { schema: { summary: 'Pool usage per network and family', response: { 200: PoolListSchema, ...errors } } },
    async () => ({ pools: operator.pools() }),
  );

  app.get(
    '/v1/operator/addresses',
    {
      schema: {
        summary: 'Per-address state (Assigned and PendingRelease; the rest is Available)',
        querystring: AddressListQuerySchema,
        response: { 200: AddressListSchema, ...errors },
      },
    },
    async (req) => ({ addresses: operator.addresses(req.query) }),
  );

  app.post(
    '/v1/operator/reconcile',
    { schema: { summary: 'Run one reconcile pass now', response: { 200: ReconcileResultSchema, ...errors } } },
    async () => operator.reconcile(),
  );

  app.get(
    '/v1/operator/invariants',
    {
      schema: {
        summary: "Check the store's invariants (what ferryctl doctor reports)",
        response: { 200: InvariantReportSchema, ...errors },
      },
    },
    async () => operator.invariants(),
  );

  app.post(
    '/v1/operator/gc',
    {
      schema: {
        summary: 'Endpoints whose netns is gone (or whose container is not kept): listed, and released with apply',
        body: OperatorGcRequestSchema,
        response: { 200: OperatorGcResultSchema, ...errors },
      },
    },
    async (req) => {
      const r = operator.gc(req.body);
      if (r.applied) req.log.warn({ released: r.candidates.length }, 'operator GC applied');
      return r;
    },
  );
};
