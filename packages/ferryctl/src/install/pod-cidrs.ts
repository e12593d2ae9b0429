/**
 * This node's pod CIDRs from the Kubernetes API (spec.podCIDRs), with the pod's service-account token:
 * the install step's only API call, the `get` on nodes in deploy/rbac.yaml (ferryd's own watches and
 * writes are the rest of it).
 */
import { readFileSync } from 'node:fs';
import { type HttpResponse, UnreachableError } from '@ferry/http';
import { requestOverNode } from '@ferry/http/node';
import { CniError, Code, onFile } from '@ferry/shared-types/errors';
import { parseAs } from '@ferry/shared-types/parse';
import * as z from 'zod/mini';
import { parseJson } from '../json';

const SA = '/var/run/secrets/kubernetes.io/serviceaccount';
/** For the connection, and for the whole request. */
const TIMEOUT_MS = 10_000;

const NodeSchema = z.looseObject({
  spec: z.optional(z.looseObject({ podCIDR: z.optional(z.string()), podCIDRs: z.optional(z.array(z.string())) })),
});

export interface ApiAccess {
  /** https://host:port; in a pod, from KUBERNETES_SERVICE_HOST/PORT. */
  server: string;
  tokenFile?: string;
  caFile?: string;
}

export function inClusterAccess(env: NodeJS.ProcessEnv, overrides: Partial<ApiAccess>): ApiAccess {
  const server =
    overrides.server ??
    (env.KUBERNETES_SERVICE_HOST
      ? `https://${env.KUBERNETES_SERVICE_HOST}:${env.KUBERNETES_SERVICE_PORT ?? '443'}`
      : undefined);
  if (!server) throw new CniError(Code.InvalidConfig, 'install: no API server (not in a pod, and no --api-server)');
  return { server, tokenFile: overrides.tokenFile ?? `${SA}/token`, caFile: overrides.caFile ?? `${SA}/ca.crt` };
}

export async function podCidrsOf(node: string, api: ApiAccess): Promise<{ v4?: string; v6?: string }> {
  const { tokenFile, caFile } = api;
  const token = tokenFile
    ? onFile(`install: read the API token ${tokenFile}`, () => readFileSync(tokenFile, 'utf8')).trim()
    : undefined;
  const ca =
    api.server.startsWith('https:') && caFile
      ? onFile(`install: read the API CA ${caFile}`, () => readFileSync(caFile, 'utf8'))
      : undefined;
  let res: HttpResponse;
  try {
    res = await requestOverNode({
      origin: api.server,
      ...(ca ? { ca } : {}),
      method: 'GET',
      path: `/api/v1/nodes/${encodeURIComponent(node)}`,
      headers: { accept: 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      connectMs: TIMEOUT_MS,
      deadlineMs: TIMEOUT_MS,
    }).answer();
  } catch (err) {
    if (!(err instanceof UnreachableError)) throw err;
    throw new CniError(
      Code.TryAgainLater,
      `install: get node ${node}: ${api.server} is unreachable: ${err.message}`,
      '',
      {
        cause: err,
      },
    );
  }
  if (res.status !== 200) {
    throw new CniError(Code.NotFound, `install: get node ${node}: HTTP ${res.status}: ${res.body.slice(0, 200)}`);
  }
  const spec = parseAs(
    NodeSchema,
    parseJson(res.body, `install: node ${node}`),
    Code.DaemonProtocol,
    `install: node ${node}`,
  ).spec;
  const cidrs = spec?.podCIDRs ?? (spec?.podCIDR ? [spec.podCIDR] : []);
  const v4 = cidrs.find((c) => !c.includes(':'));
  const v6 = cidrs.find((c) => c.includes(':'));
  return { ...(v4 ? { v4 } : {}), ...(v6 ? { v6 } : {}) };
}
