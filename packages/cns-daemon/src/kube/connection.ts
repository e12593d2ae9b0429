/**
 * ferryd's connection to the Kubernetes API through @kubernetes/client-node: credentials (a kubeconfig,
 * or the pod's service account), per-call deadlines and content types, and the one-line description of
 * a failed call that status pages and logs show.
 */
import { type ConfigurationOptions, KubeConfig, Observable, type RequestContext } from '@kubernetes/client-node';
import * as z from 'zod/mini';
import { StartupError } from '../errors';

/** Loads the kubeconfig at `path`, or the in-cluster credentials; StartupError when unusable. */
export function loadKubeConfig(path: string | undefined): KubeConfig {
  const kc = new KubeConfig();
  try {
    if (path) kc.loadFromFile(path);
    else kc.loadFromCluster();
  } catch (err) {
    throw new StartupError(`load kubeconfig ${path ?? '(in-cluster)'}: ${messageOf(err)}`, { cause: err });
  }
  const server = kc.getCurrentCluster()?.server;
  // loadFromCluster builds "https://undefined:undefined" when KUBERNETES_SERVICE_HOST/PORT are unset.
  if (!server || /\/\/(undefined|\[undefined\])(:|$)/.test(server)) {
    throw new StartupError(
      path
        ? `load kubeconfig ${path}: its current context names no cluster server`
        : 'talk to the Kubernetes API: no kubeconfig given and not in a cluster (KUBERNETES_SERVICE_HOST is unset)',
    );
  }
  return kc;
}

/**
 * Options for one call of the generated API client: a deadline for the whole call (the client has none
 * of its own), and the request's Content-Type where the client's choice is wrong (it sends every PATCH as
 * a JSON patch unless told otherwise).
 */
export function callOptions(opts: { timeoutMs: number; contentType?: string }): ConfigurationOptions {
  return {
    middleware: [
      {
        pre: (ctx: RequestContext) => {
          ctx.setSignal(AbortSignal.timeout(opts.timeoutMs));
          if (opts.contentType) ctx.setHeaderParam('Content-Type', opts.contentType);
          return new Observable(Promise.resolve(ctx));
        },
        post: (ctx) => new Observable(Promise.resolve(ctx)),
      },
    ],
    middlewareMergeStrategy: 'append',
  };
}

const ApiErrorSchema = z.object({
  code: z.optional(z.union([z.number(), z.string()])),
  statusCode: z.optional(z.number()),
  body: z.optional(z.unknown()),
  message: z.optional(z.string()),
});

/** The HTTP status a failed call was answered with (the client's ApiException, a watch's error), if any. */
export function httpStatusOfApiError(err: unknown): number | undefined {
  const e = ApiErrorSchema.safeParse(err);
  if (!e.success) return undefined;
  return e.data.statusCode ?? (typeof e.data.code === 'number' ? e.data.code : undefined);
}

/** One line for status pages and the log: the HTTP status and the API server's own message when it sent one. */
export function describeApiError(err: unknown): string {
  const e = ApiErrorSchema.safeParse(err);
  if (!e.success) return `kubernetes api: ${String(err)}`;
  const status = httpStatusOfApiError(err);
  if (status !== undefined) {
    const body = z.object({ message: z.string() }).safeParse(parsedBody(e.data.body));
    const why = body.success ? body.data.message : (e.data.message ?? '').split('\n')[0];
    return `kubernetes api: HTTP ${status}${why ? `: ${why}` : ''}`;
  }
  return `kubernetes api: ${messageOf(err)}`;
}

/** The generated client hands an error's body over as parsed JSON or as its text. */
function parsedBody(body: unknown): unknown {
  if (typeof body !== 'string') return body;
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}

export function messageOf(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
  return `${err.message}${cause}`;
}
