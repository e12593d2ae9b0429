import { CniErrorSchema } from '@ferry/shared-types/api/error';
import { StatusQuerySchema, StatusSchema } from '@ferry/shared-types/api/status';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Ipam } from '../ipam/ipam';
import type { Lifecycle } from '../lifecycle';
import type { Operator } from '../operator';

/** GET /v1/status: what CNI STATUS needs: ready, and free addresses per family of the network. */
export const statusRoutes: FastifyPluginAsyncZod<{ ipam: Ipam; lifecycle: Lifecycle; operator: Operator }> = async (
  app,
  { ipam, lifecycle, operator },
) => {
  app.get(
    '/v1/status',
    {
      schema: {
        summary: 'Whether ferryd can serve ADD on a network',
        querystring: StatusQuerySchema,
        response: { 200: StatusSchema, '4xx': CniErrorSchema, '5xx': CniErrorSchema },
      },
    },
    async (req) => {
      ipam.network(req.query.network);
      const pools = operator
        .pools()
        .filter((p) => p.network === req.query.network)
        .map((p) => ({ family: p.family, subnet: p.subnet, free: Number(p.free) }));
      return { ready: lifecycle.isReady, network: req.query.network, pools };
    },
  );
};
