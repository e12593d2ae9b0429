import { GcRequestSchema, GcResultSchema } from '@ferry/shared-types/api/gc';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Attachments } from '../attachments/attachments';
import { errors } from './errors';

/** POST /v1/gc: CNI GC for one network. Per-attachment errors are returned, not thrown. */
export const gcRoutes: FastifyPluginAsyncZod<{ attachments: Attachments }> = async (app, { attachments }) => {
  app.post(
    '/v1/gc',
    {
      config: { operation: 'gc' },
      schema: {
        summary: 'Release every attachment of a network that is not in the valid list',
        body: GcRequestSchema,
        response: { 200: GcResultSchema, ...errors },
      },
    },
    async (req) => {
      attachments.settleJournal();
      const result = attachments.gc(req.body);
      req.log.info(
        { network: req.body.network, removed: result.removed.length, errors: result.errors.length },
        'garbage collected',
      );
      return result;
    },
  );
};
