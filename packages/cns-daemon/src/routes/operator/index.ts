import { timingSafeEqual } from 'node:crypto';
import { ContainerIdParamsSchema } from '@ferry/shared-types/api/common';
import { EndpointSchema, ReleaseResultSchema } from '@ferry/shared-types/api/endpoints';
import { CniErrorSchema } from '@ferry/shared-types/api/error';
import {
  AddressListQuerySchema,
  AddressListSchema,
  EndpointListQuerySchema,
  EndpointListSchema,
  InvariantReportSchema,
  PoolListSchema,
  ReconcileResultSchema,
} from '@ferry/shared-types/api/operator';
import { CniError, Code } from '@ferry/shared-types/errors';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Operator } from '../../operator';

const errors = { '4xx': CniErrorSchema, '5xx': CniErrorSchema };

function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The operator API under /v1/operator. With `tokens` (the TCP listener) every request needs
 * `Authorization: Bearer <token>`; the read token may only GET, the admin token may do anything.
 * The hook lives in this plugin's scope, so it never touches the shim routes.
 */
export const operatorRoutes: FastifyPluginAsyncZod<{
  operator: Operator;
  tokens?: { read: string; admin?: string };
}> = async (app, { operator, tokens }) => {
  if (tokens) {
    app.addHook('onRequest', async (req) => {
      const header = req.headers.authorization ?? '';
      const given = header.startsWith('Bearer ') ? header.slice(7).trim() : '';
      const isAdmin = tokens.admin !== undefined && given !== '' && sameToken(given, tokens.admin);
      const isReader = given !== '' && sameToken(given, tokens.read);
      if (!isAdmin && !isReader) throw new CniError(Code.Unauthorized, 'operator API: missing or wrong bearer token');
      if (!isAdmin && req.method !== 'GET' && req.method !== 'HEAD') {
        throw new CniError(Code.Forbidden, `operator API: ${req.method} needs the admin token`);
      }
    });
  }

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

  app.get(
    '/v1/operator/pools',
    { schema: { summary: 'Pool usage per network and family', response: { 200: PoolListSchema, ...errors } } },
    async () => ({ pools: operator.pools() }),
  );

  app.get(
    '/v1/operator/addresses',
    {
      schema: {
        summary: 'Per-address state (Assigned and PendingRelease; the rest is Available)',
        querystring: AddressListQuerySchema,
        response: { 200: AddressListSchema, ...errors },
      },
    },
    async (req) => ({ addresses: operator.addresses(req.query) }),
  );

  app.post(
    '/v1/operator/reconcile',
    { schema: { summary: 'Run one reconcile pass now', response: { 200: ReconcileResultSchema, ...errors } } },
    async () => operator.reconcile(),
  );

  app.get(
    '/v1/operator/invariants',
    {
      schema: {
        summary: "Check the store's invariants (what ferryctl doctor reports)",
        response: { 200: InvariantReportSchema, ...errors },
      },
    },
    async () => operator.invariants(),
  );
};
