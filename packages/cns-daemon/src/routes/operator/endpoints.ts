import { ContainerIdParamsSchema } from '@ferry/shared-types/api/common';
import { EndpointSchema, ReleaseResultSchema } from '@ferry/shared-types/api/endpoints';
import { EndpointListQuerySchema, EndpointListSchema } from '@ferry/shared-types/api/operator';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Operator } from '../../operator';
import { errors } from '../errors';

/** List, show and force-delete endpoints. */
export const operatorEndpointRoutes: FastifyPluginAsyncZod<{ operator: Operator }> = async (app, { operator }) => {
  app.get(
    '/v1/operator/endpoints',
    {
      schema: {
        summary: 'List endpoints, filtered by pod namespace/name, network or NIC type',
        querystring: EndpointListQuerySchema,
        response: { 200: EndpointListSchema, ...errors },
      },
    },
    async (req) => ({ endpoints: operator.listEndpoints(req.query) }),
  );

  app.get(
    '/v1/operator/endpoints/:containerId',
    {
      schema: {
        summary: 'One endpoint with all its interfaces',
        params: ContainerIdParamsSchema,
        response: { 200: EndpointSchema, ...errors },
      },
    },
    async (req) => operator.getEndpoint(req.params.containerId),
  );

  app.delete(
    '/v1/operator/endpoints/:containerId',
    {
      schema: {
        summary: 'Force-delete every attachment of a container (addresses released, no netlink work)',
        params: ContainerIdParamsSchema,
        response: { 200: ReleaseResultSchema, ...errors },
      },
    },
    async (req) => {
      const r = operator.forceDelete(req.params.containerId);
      req.log.warn({ containerId: req.params.containerId, interfaces: r.released.length }, 'force-deleted');
      return r;
    },
  );
};
