import { NodesReportSchema } from '@ferry/shared-types/api/cluster';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Operator } from '../../operator';
import { errors } from '../errors';

/** Cluster networking: the peers, their routes and VXLAN entries as the kernel holds them now. */
export const operatorNodeRoutes: FastifyPluginAsyncZod<{ operator: Operator }> = async (app, { operator }) => {
  app.get(
    '/v1/operator/nodes',
    {
      schema: {
        summary: "The other nodes, their pod CIDRs and this node's entries for them (present, missing, stale)",
        response: { 200: NodesReportSchema, ...errors },
      },
    },
    async () => operator.nodes(),
  );
};
