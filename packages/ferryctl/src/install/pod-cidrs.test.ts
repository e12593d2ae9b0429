import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CniError, Code } from '@ferry/shared-types/errors';
import { expect, test } from 'vitest';
import { tempDir } from '../testing/ferryd';
import { nodeWith, useNodeApi } from '../testing/node-api';
import { inClusterAccess, podCidrsOf } from './pod-cidrs';

const SA = '/var/run/secrets/kubernetes.io/serviceaccount';

test("inClusterAccess: the pod's service account and API server, each overridable", () => {
  const env = { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '6443' };
  expect(inClusterAccess(env, {})).toEqual({
    server: 'https://10.96.0.1:6443',
    tokenFile: `${SA}/token`,
    caFile: `${SA}/ca.crt`,
  });
  expect(inClusterAccess({ KUBERNETES_SERVICE_HOST: '10.96.0.1' }, {}).server).toBe('https://10.96.0.1:443');
  expect(inClusterAccess(env, { server: 'https://api:6443', tokenFile: '/t', caFile: '/ca' })).toEqual({
    server: 'https://api:6443',
    tokenFile: '/t',
    caFile: '/ca',
  });
  expect(() => inClusterAccess({}, {})).toThrow(
    new CniError(Code.InvalidConfig, 'install: no API server (not in a pod, and no --api-server)'),
  );
});

test("podCidrsOf: the node's pod CIDRs by family, asked with the token", async (t) => {
  const api = await useNodeApi(t, {
    'node-a': nodeWith('10.244.1.0/24', 'fd00:10:244:1::/64'),
    'node-b': nodeWith('fd00:10:244:2::/64'),
    // An older cluster: only the singular field.
    'node-c': { spec: { podCIDR: '10.244.3.0/24' } },
    'node-d': { spec: {} },
  });
  const tokenFile = join(tempDir(t), 'token');
  writeFileSync(tokenFile, 'sa-token\n');
  const access = { server: api.url, tokenFile };
  expect(await podCidrsOf('node-a', access)).toEqual({ v4: '10.244.1.0/24', v6: 'fd00:10:244:1::/64' });
  expect(await podCidrsOf('node-b', access)).toEqual({ v6: 'fd00:10:244:2::/64' });
  expect(await podCidrsOf('node-c', access)).toEqual({ v4: '10.244.3.0/24' });
  expect(await podCidrsOf('node-d', access)).toEqual({});
  expect(api.requests[0]).toEqual({ path: '/api/v1/nodes/node-a', authorization: 'Bearer sa-token' });
});

test('podCidrsOf: an unknown node is NotFound; an answer that is not a Node is a protocol or decode error', async (t) => {
  const api = await useNodeApi(t, { odd: { spec: 'not an object' }, garbled: '{"spec": ' });
  const access = { server: api.url };
  await expect(podCidrsOf('nope', access)).rejects.toMatchObject({
    code: Code.NotFound,
    message: expect.stringMatching(/^install: get node nope: HTTP 404: /),
  });
  await expect(podCidrsOf('odd', access)).rejects.toMatchObject({ code: Code.DaemonProtocol });
  await expect(podCidrsOf('garbled', access)).rejects.toMatchObject({
    code: Code.DecodeFailure,
    message: expect.stringMatching(/^install: node garbled: /),
  });
});

test('podCidrsOf: a token file that cannot be read is an I/O error naming it', async (t) => {
  const api = await useNodeApi(t, { 'node-a': nodeWith('10.244.1.0/24') });
  const tokenFile = join(tempDir(t), 'missing-token');
  await expect(podCidrsOf('node-a', { server: api.url, tokenFile })).rejects.toMatchObject({
    code: Code.IoFailure,
    message: expect.stringContaining(tokenFile),
  });
});
