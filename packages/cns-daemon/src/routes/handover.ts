import { HandOverAnswerSchema, HandOverRequestSchema } from '@ferry/shared-types/api/handover';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { HANDOVER_PATH, type HandingOver } from '../handover/handing-over';
import { errors } from './errors';

/** POST /v1/handover: a new ferryd asks this one for the database and the socket (handover/handing-over.ts). */
export const handOverRoutes: FastifyPluginAsyncZod<{ handingOver: HandingOver }> = async (app, { handingOver }) => {
  app.post(
    HANDOVER_PATH,
    {
      schema: {
        summary: 'Hand the database and the socket over to a new ferryd (a rollout with surge)',
        body: HandOverRequestSchema,
        response: { 200: HandOverAnswerSchema, ...errors },
      },
    },
    async (req) => handingOver.handOver(req.body),
  );
};
