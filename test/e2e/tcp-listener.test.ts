/** ferryd's optional TCP listener for operators, on loopback, with ferryctl --url and bearer tokens. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Method } from '@ferry/http';
import { expect, test } from 'vitest';
import { inNetnsTry } from '../fixtures/netns';
import { fetchIn } from '../fixtures/netns-fetch';
import { useNode } from '../fixtures/node';
import { DIST_BIN } from '../fixtures/paths';
import { useTmpDir } from '../fixtures/tmp';

test('read token may read, admin token may change state, no token gets 401, and no shim route is there', async (t) => {
  const dir = useTmpDir(t, 'tokens');
  writeFileSync(join(dir, 'read'), 'r-0123456789abcdef');
  writeFileSync(join(dir, 'admin'), 'a-0123456789abcdef');
  // The node namespace's own loopback: the listener is reachable only from inside it, and no other
  // test shares it, so a fixed port is safe.
  const port = 9470;
  const { node, ferryd } = await useNode(t, {
    tcp: { host: '127.0.0.1', port, tokenFile: join(dir, 'read'), adminTokenFile: join(dir, 'admin') },
  });
  const ctl = (token: string, ...args: string[]) =>
    inNetnsTry(
      node,
      `${DIST_BIN}/ferryctl`,
      '--url',
      `http://127.0.0.1:${port}`,
      '--token-file',
      join(dir, token),
      ...args,
    );
  const curl = async (path: string, method: Method = 'GET') =>
    (await fetchIn(node, method, `http://127.0.0.1:${port}${path}`)).status;

  const pools = await ctl('read', 'ipam', '--json');
  expect(pools.exitCode, pools.stderr).toBe(0);
  expect(JSON.parse(pools.stdout).pools[0]).toMatchObject({ network: 'ferry', family: 4 });
  // An endpoint that exists: the read token may not force-delete it, the admin token may.
  const a = await ferryd.request('POST', '/v1/allocations', {
    network: 'ferry',
    containerId: 'victim',
    ifName: 'eth0',
    netns: '/proc/self/ns/net',
  });
  expect(a.status, a.body).toBe(200);
  const denied = await ctl('read', 'endpoints', 'delete', 'victim');
  expect(denied.exitCode).toBe(1);
  expect(denied.stderr).toContain('DELETE needs the admin token');
  expect((await ferryd.request('GET', '/v1/endpoints/victim')).status).toBe(200);
  const forced = await ctl('admin', 'endpoints', 'delete', 'victim');
  expect(forced.exitCode, forced.stderr).toBe(0);
  expect((await ferryd.request('GET', '/v1/endpoints/victim')).status).toBe(404);
  expect(await ferryd.assignedAddresses()).toEqual([]);
  expect(await curl('/v1/operator/pools')).toBe(401);
  expect(await curl('/v1/allocations', 'POST')).toBe(404);
  expect(await curl('/healthz')).toBe(200);
});
