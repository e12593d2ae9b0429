import { StatusQuerySchema, StatusSchema } from '@ferry/shared-types/api/status';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Lifecycle } from '../lifecycle';
import type { Operator } from '../operator';
import { errors } from './errors';

/** GET /v1/status: what CNI STATUS needs: ready, and free addresses per family of the network. */
export const statusRoutes: FastifyPluginAsyncZod<{ lifecycle: Lifecycle; operator: Operator }> = async (
  app,
  { lifecycle, operator },
) => {
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
      return { ready: lifecycle.isReady, network: req.query.network, pools };
    },
  );
};
