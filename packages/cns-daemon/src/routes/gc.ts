import { CniErrorSchema } from '@ferry/shared-types/api/error';
import { GcRequestSchema, GcResultSchema } from '@ferry/shared-types/api/gc';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Attachments } from '../endpoints/attachments';

/** POST /v1/gc: CNI GC for one network. Per-attachment errors are returned, not thrown. */
export const gcRoutes: FastifyPluginAsyncZod<{ attachments: Attachments; reconcileSoon(): void }> = async (
  app,
  { attachments, reconcileSoon },
) => {
  app.post(
    '/v1/gc',
    {
      schema: {
        summary: 'Release every attachment of a network that is not in the valid list',
        body: GcRequestSchema,
        response: { 200: GcResultSchema, '4xx': CniErrorSchema, '5xx': CniErrorSchema },
      },
    },
    async (req) => {
      const result = attachments.gc(req.body);
      if (result.removed.some((r) => r.nicType === 'DelegatedNIC')) reconcileSoon();
      req.log.info(
        { network: req.body.network, removed: result.removed.length, errors: result.errors.length },
        'garbage collected',
      );
      return result;
    },
  );
};
