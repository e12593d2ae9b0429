import { HealthSchema, ReadinessSchema } from '@ferry/shared-types/api/status';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Lifecycle } from '../lifecycle';
import type { Metrics } from '../metrics';
import { readinessOf } from '../readiness';
import type { StorageHealth } from '../storage/health';

/**
 * /healthz (alive and the database answers: reads, so a full disk leaves ferryd alive), /readyz,
 * /metrics. No auth anywhere: every surface serves them, the scrape listener nothing else.
 */
export const healthRoutes: FastifyPluginAsyncZod<{
  lifecycle: Lifecycle;
  storage: StorageHealth;
  metrics: Metrics;
  ping(): void;
}> = async (app, { lifecycle, storage, metrics, ping }) => {
  app.get(
    '/healthz',
    { schema: { summary: 'Liveness', response: { 200: HealthSchema, 503: HealthSchema } } },
    async (_req, reply) => {
      try {
        ping();
        return { ok: true };
      } catch (err) {
        return reply.status(503).send({ ok: false, msg: `database: ${(err as Error).message}` });
      }
    },
  );

  app.get(
    '/readyz',
    {
      schema: {
        summary:
          'Readiness: ready only after start-up reconciliation, not while draining, not while storage is failing (reason says why)',
        response: { 200: ReadinessSchema, 503: ReadinessSchema },
      },
    },
    async (_req, reply) => {
      const body = readinessOf(lifecycle, storage);
      return reply.status(body.ready ? 200 : 503).send(body);
    },
  );

  app.get('/metrics', { schema: { summary: 'Prometheus metrics', hide: true } }, async (_req, reply) => {
    const text = await metrics.registry.metrics();
    return reply.type(metrics.registry.contentType).send(text);
  });
};
