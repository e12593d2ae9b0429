import { StatusQuerySchema, StatusSchema } from '@ferry/shared-types/api/status';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Lifecycle } from '../lifecycle';
import type { Operator } from '../operator';
import { readinessOf } from '../readiness';
import type { StorageHealth } from '../storage/health';
import { errors } from './errors';

/** GET /v1/status: what CNI STATUS needs: ready (and why not), and free addresses per family of the network. */
export const statusRoutes: FastifyPluginAsyncZod<{
  lifecycle: Lifecycle;
  storage: StorageHealth;
  operator: Operator;
}> = async (app, { lifecycle, storage, operator }) => {
  app.get(
    '/v1/status',
    {
      schema: {
        summary: 'Whether ferryd can serve ADD on a network',
        querystring: StatusQuerySchema,
        response: { 200: StatusSchema, ...errors },
      },
    },
    async (req) => {
      const pools = operator
        .pools(req.query.network)
        .map((p) => ({ family: p.family, subnet: p.subnet, free: Number(p.free) }));
      const { ready, reason } = readinessOf(lifecycle, storage);
      return { ready, network: req.query.network, pools, ...(reason ? { reason } : {}) };
    },
  );
};
