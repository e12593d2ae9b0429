/**
 * buildApp(deps) assembles ferryd's HTTP API and never listens (main.ts does), so tests drive it with
 * inject(). The shim routes and the operator routes are sibling plugins: the operator plugin's
 * bearer-token hook (TCP surface only) cannot reach the shim routes. The scrape surface has neither.
 */
import swagger from '@fastify/swagger';
import { apiSkewOf, FERRY_API_HEADER, FERRY_API_VERSION, parseApiVersion } from '@ferry/shared-types/api/version';
import { MAX_CONTAINER_ID_LENGTH } from '@ferry/shared-types/cni/validate';
import { CniError, type CniErrorBody, Code, toErrorBody } from '@ferry/shared-types/errors';
import { describeIssue } from '@ferry/shared-types/parse';
import Fastify, { type FastifyError, type FastifyReply, LogController } from 'fastify';
import {
  hasZodFastifySchemaValidationErrors,
  jsonSchemaTransform,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import type { Logger } from 'pino';
import type { Attachments } from './attachments/attachments';
import type { DevicePlugin } from './device-plugin/build';
import { httpStatusOf } from './errors';
import type { HandingOver } from './handover/handing-over';
import type { BlockManager } from './ipam/blocks/manager';
import type { StaticClaims } from './ipam/claims/static-claims';
import type { Ipam } from './ipam/ipam';
import type { Lifecycle } from './lifecycle';
import type { Metrics } from './metrics';
import type { Operator } from './operator';
import type { PodServices } from './pods/build';
import { validatorCompiler } from './requests';
import { allocationRoutes } from './routes/allocations';
import { endpointRoutes } from './routes/endpoints';
import { gcRoutes } from './routes/gc';
import { handOverRoutes } from './routes/handover';
import { healthRoutes } from './routes/health';
import { operatorRoutes } from './routes/operator/index';
import { statusRoutes } from './routes/status';
import { serializerCompilerOf } from './serializer';
import type { StorageHealth } from './storage/health';
import type { GroupCommit } from './store/group-commit';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** What a route does, in the words of storage errors and the `operation` label of their metric. */
    operation?: string;
  }
}

export interface AppDeps {
  attachments: Attachments;
  /** Where the shim routes run their writes: concurrent requests share one transaction. */
  writes: GroupCommit;
  ipam: Ipam;
  operator: Operator;
  lifecycle: Lifecycle;
  /** Classifies storage failures (disk full, read-only, I/O) and says whether writes work. */
  storage: StorageHealth;
  metrics: Metrics;
  log: Logger;
  /** Liveness: throws when the database no longer answers. */
  ping(): void;
  /** This node's pods, when ferryd watches them (the operator API shows them). */
  pods?: PodServices;
  /** The kubelet's device plugin, when ferryd serves groups to it (an ADD asks it for the pod's allocation). */
  devicePlugin?: DevicePlugin;
  /** The block manager, when a network's pool is a range split into blocks (cluster IPAM). */
  blocks?: BlockManager;
  /** Static addresses claimed cluster-wide (with cluster IPAM). */
  claims?: StaticClaims;
}

export interface AppOptions {
  /**
   * `unix` serves everything (the socket is root-only); `tcp` serves operators, behind bearer tokens;
   * `metrics` serves /metrics and the probes only (the scrape listener, open to the network).
   */
  surface: 'unix' | 'tcp' | 'metrics';
  tokens?: { read: string; admin?: string };
  /** Encode every answer through its route's schema and fail on drift (tests; see serializer.ts). */
  checkResponses?: boolean;
  /** The unix surface's side of a rollout: POST /v1/handover and the hook that holds requests meanwhile. */
  handingOver?: HandingOver;
}

/** The API version as the header states it. */
const API_VERSION_TEXT = String(FERRY_API_VERSION);

export async function buildApp(deps: AppDeps, opts: AppOptions = { surface: 'unix' }) {
  const app = Fastify({
    loggerInstance: deps.log,
    // Handlers log what happened to which container at info; the generic request line is debug (below).
    logController: new LogController({ disableRequestLogging: true }),
    // DEL bodies are small; a huge body is an attack or a bug, refused before parsing.
    bodyLimit: 1024 * 1024,
    return503OnClosing: false,
    // Container IDs go in the path and may be 255 characters (fastify's default stops at 100, and a
    // longer one would be "route not found", which a DEL cannot tell from an unknown container).
    routerOptions: { maxParamLength: MAX_CONTAINER_ID_LENGTH },
    // Errors fastify raises before routing (a malformed URL, say) leave in the same shape as all others.
    frameworkErrors: (err, _req, reply: FastifyReply) => {
      reply.status(400).send({ code: Code.InvalidConfig, msg: `invalid request: ${err.message}` });
    },
  }).withTypeProvider<ZodTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompilerOf(opts.checkResponses ?? false));
  app.setErrorHandler((thrown: Error, req, reply) => {
    const operation = req.routeOptions.config.operation ?? `${req.method} ${req.routeOptions.url ?? 'unknown'}`;
    const err = deps.storage.errorOf(thrown, operation) ?? thrown;
    const body = errorBodyOf(err, req.id, deps.log);
    deps.metrics.errors.inc({ code: String(body.code) });
    return reply.status(statusOf(err, body)).send(body);
  });
  app.setNotFoundHandler((req, reply) =>
    reply.status(404).send({ code: Code.NotFound, msg: `route ${req.method} ${req.url.split('?')[0]} not found` }),
  );
  // First of all hooks: during a hand-over every request is held, then proxied to the successor.
  if (opts.handingOver) app.addHook('onRequest', opts.handingOver.onRequest);
  // The version-skew rule (shared-types api/version.ts): every answer states this ferryd's API version,
  // and a ferry-cni outside the rule is refused before its request is read. Only ferry-cni sends the
  // header: ferryctl (of ferryd's own release) and operators' tools are served without it.
  app.addHook('onRequest', (req, reply, done) => {
    reply.header(FERRY_API_HEADER, API_VERSION_TEXT);
    const stated = req.headers[FERRY_API_HEADER];
    if (stated === undefined || stated === API_VERSION_TEXT) return done();
    const skew = apiSkewOf(parseApiVersion(stated), FERRY_API_VERSION);
    done(skew === undefined ? undefined : new CniError(Code.ApiVersionSkew, skew));
  });
  // A callback hook, not an async one: no promise per request for what is synchronous work.
  app.addHook('onResponse', (req, reply, done) => {
    const ms = reply.elapsedTime;
    if (deps.log.isLevelEnabled('debug')) {
      req.log.debug({ url: req.url, statusCode: reply.statusCode, ms }, 'request completed');
    }
    deps.metrics.requestDuration.observe(
      { method: req.method, route: req.routeOptions.url ?? 'unknown', status_code: String(reply.statusCode) },
      ms / 1000,
    );
    done();
  });

  if (opts.surface !== 'metrics') {
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: { title: 'ferryd API', version: API_VERSION_TEXT, description: 'The node state daemon of the Ferry CNI' },
      },
      transform: jsonSchemaTransform,
    });
    app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  }

  await app.register(healthRoutes, {
    lifecycle: deps.lifecycle,
    storage: deps.storage,
    metrics: deps.metrics,
    ping: deps.ping,
  });
  if (opts.surface === 'metrics') return app;
  if (opts.surface === 'unix') {
    await app.register(allocationRoutes, {
      attachments: deps.attachments,
      writes: deps.writes,
      lifecycle: deps.lifecycle,
      metrics: deps.metrics,
      storage: deps.storage,
      ...(deps.pods ? { pods: deps.pods } : {}),
      ...(deps.devicePlugin ? { devicePlugin: deps.devicePlugin } : {}),
      ...(deps.blocks ? { blocks: deps.blocks } : {}),
      ...(deps.claims ? { claims: deps.claims } : {}),
    });
    await app.register(endpointRoutes, {
      attachments: deps.attachments,
      writes: deps.writes,
      metrics: deps.metrics,
    });
    await app.register(gcRoutes, { attachments: deps.attachments });
    await app.register(statusRoutes, { lifecycle: deps.lifecycle, storage: deps.storage, operator: deps.operator });
    if (opts.handingOver) await app.register(handOverRoutes, { handingOver: opts.handingOver });
  }
  await app.register(operatorRoutes, {
    operator: deps.operator,
    pods: deps.pods,
    ...(deps.blocks ? { blocks: deps.blocks } : {}),
    ...(opts.tokens ? { tokens: opts.tokens } : {}),
  });
  return app;
}

export type FerrydApp = Awaited<ReturnType<typeof buildApp>>;

function clientStatusOf(err: Error): number | undefined {
  const status = (err as Partial<FastifyError>).statusCode;
  return status !== undefined && status >= 400 && status < 500 ? status : undefined;
}

function statusOf(err: Error, body: CniErrorBody): number {
  if (err instanceof CniError) return httpStatusOf(err.code);
  if (body.code === Code.Internal) return 500;
  return clientStatusOf(err) ?? 400;
}

/** Every error leaves as { code, msg, details? }; only genuine faults are 5xx, logged with their stack. */
function errorBodyOf(err: Error, reqId: string, log: Logger): CniErrorBody {
  if (err instanceof CniError) return toErrorBody(err);
  if (hasZodFastifySchemaValidationErrors(err)) {
    const first = err.validation[0];
    const where = first?.instancePath.replace(/^\//, '').replaceAll('/', '.') || '(root)';
    return {
      code: Code.InvalidConfig,
      msg: `invalid request ${err.validationContext ?? 'input'}: ${where}: ${describeIssue(first ? { ...first.params, code: first.keyword, message: first.message } : undefined)}`,
    };
  }
  if (clientStatusOf(err) !== undefined) {
    const fstCode = (err as Partial<FastifyError>).code;
    const isDecode = fstCode === 'FST_ERR_CTP_INVALID_JSON_BODY' || fstCode === 'FST_ERR_CTP_EMPTY_JSON_BODY';
    const code = isDecode ? Code.DecodeFailure : Code.InvalidConfig;
    return { code, msg: `invalid request: ${err.message}` };
  }
  log.error({ err, reqId }, 'internal error');
  return { code: Code.Internal, msg: `internal error (request ${reqId}); see ferryd's log` };
}
