import { type BlockRange, BlocksReportSchema } from '@ferry/shared-types/api/blocks';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { errors } from '../errors';

/** Cluster IPAM: this node's blocks of each range and the cluster's use of it (ferryctl blocks). */
export const operatorBlockRoutes: FastifyPluginAsyncZod<{ blocks?: { status(): BlockRange[] } }> = async (
  app,
  { blocks },
) => {
  app.get(
    '/v1/operator/blocks',
    {
      schema: {
        summary: "This node's blocks of each cluster-IPAM range, and the cluster's use of the range",
        response: { 200: BlocksReportSchema, ...errors },
      },
    },
    async () => ({ isEnabled: blocks !== undefined, ranges: blocks?.status() ?? [] }),
  );
};
