import { PodParamsSchema, PodQuerySchema, PodReportSchema, PodsReportSchema } from '@ferry/shared-types/api/pods';
import { CniError, Code } from '@ferry/shared-types/errors';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { PodServices } from '../../pods/build';
import { podReport, podsReport } from '../../pods/report';
import { errors } from '../errors';

/** This node's pods as ferryd's watch holds them, and what one pod asks for (`ferry.dev/nics`). */
export const operatorPodRoutes: FastifyPluginAsyncZod<{ pods?: PodServices }> = async (app, { pods }) => {
  const watched = (): PodServices => {
    if (!pods) throw new CniError(Code.NotFound, 'ferryd does not watch pods (`cluster.kubernetes.pods` is not set)');
    return pods;
  };
  app.get(
    '/v1/operator/pods',
    {
      schema: {
        summary: "This node's pods in ferryd's cache, the watch's state and the network-status writer's",
        response: { 200: PodsReportSchema, ...errors },
      },
    },
    async () => podsReport(watched()),
  );
  app.get(
    '/v1/operator/pods/:namespace/:name',
    {
      schema: {
        summary:
          'One pod and its ferry.dev/nics intent, found as an ADD finds it: the cache, else the API server (code 11 when it does not answer in time)',
        params: PodParamsSchema,
        querystring: PodQuerySchema,
        response: { 200: PodReportSchema, ...errors },
      },
    },
    async (req) => podReport(watched(), { ...req.params, ...(req.query.uid ? { uid: req.query.uid } : {}) }),
  );
};
