import { FailedEntryParamsSchema, QueueStatusSchema } from '@ferry/shared-types/api/queue';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Operator } from '../../operator';
import { errors } from '../errors';

/** The delete queue: pending and set-aside entries; put a set-aside entry back. */
export const operatorQueueRoutes: FastifyPluginAsyncZod<{ operator: Operator }> = async (app, { operator }) => {
  app.get(
    '/v1/operator/queue',
    {
      schema: {
        summary: 'Delete-queue entries: pending, and set aside with their reasons',
        response: { 200: QueueStatusSchema, ...errors },
      },
    },
    async () => operator.queue(),
  );

  app.post(
    '/v1/operator/queue/failed/:file/retry',
    {
      schema: {
        summary: 'Put a set-aside entry back into the queue (it is validated again)',
        params: FailedEntryParamsSchema,
        response: { 200: QueueStatusSchema, ...errors },
      },
    },
    async (req) => operator.retryQueueEntry(req.params.file),
  );
};
