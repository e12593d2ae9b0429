/** POST /v1/allocations: the first step of ADD, ferryd's half of which is allocations/allocate.ts. */
import { AllocateRequestSchema, AllocationSchema } from '@ferry/shared-types/api/allocations';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { Allocate, type AllocateDeps } from '../allocations/allocate';
import { errors } from './errors';

export const allocationRoutes: FastifyPluginAsyncZod<Omit<AllocateDeps, 'log'>> = async (app, deps) => {
  const add = new Allocate({ ...deps, log: app.log });
  app.post(
    '/v1/allocations',
    {
      config: { operation: 'allocate' },
      schema: {
        summary: 'Allocate addresses and the NIC plan for one attachment (idempotent)',
        body: AllocateRequestSchema,
        response: { 200: AllocationSchema, ...errors },
      },
    },
    async (req) => add.allocate(req.body, req.log),
  );
};
