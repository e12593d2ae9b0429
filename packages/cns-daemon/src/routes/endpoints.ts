import { ContainerIdParamsSchema } from '@ferry/shared-types/api/common';
import {
  CommitRequestSchema,
  EndpointSchema,
  ReleaseQuerySchema,
  ReleaseResultSchema,
} from '@ferry/shared-types/api/endpoints';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Attachments } from '../attachments/attachments';
import type { Metrics } from '../metrics';
import type { GroupCommit } from '../store/group-commit';
import { errors } from './errors';

/**
 * Endpoint state for the shim: commit (PUT, for an ADD whose commit-journal entry could not be written),
 * read (GET), release (DELETE, idempotent). Each settles the commit journal first: an ADD committed
 * through it is committed before it is read or released (and a release leaves no entry behind to be
 * promoted later).
 */
export const endpointRoutes: FastifyPluginAsyncZod<{
  attachments: Attachments;
  writes: GroupCommit;
  metrics: Metrics;
}> = async (app, { attachments, writes, metrics }) => {
  app.put(
    '/v1/endpoints/:containerId',
    {
      config: { operation: 'commit' },
      schema: {
        summary: 'Commit what the shim built for an attachment, where its commit-journal entry cannot be written',
        params: ContainerIdParamsSchema,
        body: CommitRequestSchema,
        response: { 200: EndpointSchema, ...errors },
      },
    },
    async (req) => {
      attachments.settleJournal();
      const ep = await writes.run(() => attachments.commit(req.params.containerId, req.body));
      req.log.info({ containerId: req.params.containerId, ifName: req.body.ifName }, 'committed');
      return ep;
    },
  );

  app.get(
    '/v1/endpoints/:containerId',
    {
      schema: {
        summary: 'Every interface ferryd holds for a container',
        params: ContainerIdParamsSchema,
        response: { 200: EndpointSchema, ...errors },
      },
    },
    async (req) => {
      attachments.settleJournal();
      return attachments.get(req.params.containerId);
    },
  );

  app.delete(
    '/v1/endpoints/:containerId',
    {
      config: { operation: 'release' },
      schema: {
        summary:
          'Release one attachment: addresses and state in one transaction (unknown = success); with hostVethDeleted=true, only if its InfraNIC is all it has (else toTearDown lists its interfaces)',
        params: ContainerIdParamsSchema,
        querystring: ReleaseQuerySchema,
        response: { 200: ReleaseResultSchema, ...errors },
      },
    },
    async (req) => {
      const { containerId } = req.params;
      const { network, ifName, generation, hostVethDeleted } = req.query;
      attachments.settleJournal();
      const result = await writes.run(() =>
        hostVethDeleted
          ? attachments.releaseIfOnly(containerId, network, ifName, generation)
          : attachments.release(containerId, network, ifName, generation),
      );
      if (result.released.length > 0) metrics.releases.inc({ network });
      const kept = result.toTearDown;
      req.log.info(
        { containerId, ifName, network, interfaces: (kept ?? result.released).length },
        kept ? 'kept for teardown' : 'released',
      );
      return result;
    },
  );
};
