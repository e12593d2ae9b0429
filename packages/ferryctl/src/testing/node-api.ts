/**
 * A stand-in for the Kubernetes API's `GET /api/v1/nodes/NAME` on a loopback port (plain HTTP), for
 * the install step's pod-CIDR lookup: it answers with the Node objects it was given and records the
 * requests (path and authorization header). Closed when the test finishes.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'vitest';

export interface NodeApi {
  url: string;
  requests: { path: string; authorization: string | undefined }[];
}

/** `nodes`: name → the JSON body served for it (a string is served as it is); other names are 404. */
export async function useNodeApi(t: TestContext, nodes: Record<string, unknown>): Promise<NodeApi> {
  const requests: NodeApi['requests'] = [];
  const server = createServer((req, res) => {
    const path = req.url ?? '';
    requests.push({ path, authorization: req.headers.authorization });
    const name = decodeURIComponent(path.replace(/^\/api\/v1\/nodes\//, ''));
    const body = path.startsWith('/api/v1/nodes/') ? nodes[name] : undefined;
    if (body === undefined) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"kind":"Status","reason":"NotFound"}');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(typeof body === 'string' ? body : JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

/** A Node object with `spec.podCIDRs`. */
export const nodeWith = (...podCIDRs: string[]) => ({ kind: 'Node', spec: { podCIDR: podCIDRs[0], podCIDRs } });
