import { timingSafeEqual } from 'node:crypto';
import type { BlockRange } from '@ferry/shared-types/api/blocks';
import { CniError, Code } from '@ferry/shared-types/errors';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Operator } from '../../operator';
import type { PodServices } from '../../pods/build';
import { operatorBlockRoutes } from './blocks';
import { operatorDeviceRoutes } from './devices';
import { operatorEndpointRoutes } from './endpoints';
import { operatorIpamRoutes } from './ipam';
import { operatorNodeRoutes } from './nodes';
import { operatorPodRoutes } from './pods';
import { operatorQueueRoutes } from './queue';

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
  pods?: PodServices;
  /** The block manager, when a network's pool is a range split into blocks. */
  blocks?: { status(): BlockRange[] };
  tokens?: { read: string; admin?: string };
}> = async (app, { operator, pods, blocks, tokens }) => {
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

  await app.register(operatorEndpointRoutes, { operator });
  await app.register(operatorIpamRoutes, { operator });
  await app.register(operatorDeviceRoutes, { operator });
  await app.register(operatorQueueRoutes, { operator });
  await app.register(operatorNodeRoutes, { operator });
  await app.register(operatorPodRoutes, { pods });
  await app.register(operatorBlockRoutes, blocks ? { blocks } : {});
};
