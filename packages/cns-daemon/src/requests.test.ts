import { AllocateRequestSchema } from '@ferry/shared-types/api/allocations';
import { ContainerIdParamsSchema } from '@ferry/shared-types/api/common';
import { CommitRequestSchema, ReleaseQuerySchema } from '@ferry/shared-types/api/endpoints';
import { holdToSchema } from '@ferry/shared-types/testing/oracle';
import { expect, test } from 'vitest';
import {
  acceptAllocateRequest,
  acceptCommitRequest,
  acceptParams,
  acceptReleaseQuery,
  validatorCompiler,
} from './requests';

const CONTAINER = '3f2a9c0d1e4b5a6978877665544332211aabbccddeeff00112233445566778899';

holdToSchema(
  'allocate request',
  [
    { network: 'ferry', containerId: CONTAINER, ifName: 'eth0', netns: '/var/run/netns/cni-1' },
    {
      network: 'ferry',
      containerId: CONTAINER,
      ifName: 'eth0',
      netns: '/proc/4242/ns/net',
      pod: { namespace: 'default', name: 'web-0', uid: '6c0b1a3e-3f7e-4d8e-9a51-2b6f0d6f1c11', infraContainerId: 'x' },
      delegatedNICs: { group: 'frontend', count: 2 },
    },
  ],
  acceptAllocateRequest,
  AllocateRequestSchema,
);

holdToSchema(
  'commit request',
  [
    {
      network: 'ferry',
      ifName: 'eth0',
      generation: 7,
      nics: [
        { ifName: 'eth0', mac: '0a:58:0a:f4:00:05', containerIfIndex: 2 },
        { ifName: 'net1', mac: '02:00:00:00:00:01', containerIfIndex: 3 },
      ],
    },
  ],
  acceptCommitRequest,
  CommitRequestSchema,
);

holdToSchema(
  'endpoint path parameters',
  [{ containerId: CONTAINER }, { containerId: 'a' }, { containerId: 'pod_1.b-2' }],
  acceptParams,
  ContainerIdParamsSchema,
);

holdToSchema(
  'release query',
  [
    { network: 'ferry', ifName: 'eth0' },
    { network: 'ferry', ifName: 'eth0', generation: '12' },
    { network: 'n-2', ifName: 'net1', generation: '999999999999999' },
  ],
  acceptReleaseQuery,
  ReleaseQuerySchema,
);

test('a request the hand check is not sure of goes to the schema, which words the error', () => {
  const validate = validatorCompiler({ schema: CommitRequestSchema, method: 'PUT', url: '/x', httpPart: 'body' });
  const ok = {
    network: 'ferry',
    ifName: 'eth0',
    generation: 1,
    nics: [{ ifName: 'eth0', mac: '0a:58:0a:f4:00:05', containerIfIndex: 2 }],
  };
  expect(validate(ok)).toEqual({ value: ok });
  // Upper case: the hand check leaves it to zod, which takes it.
  const upper = { ...ok, nics: [{ ...ok.nics[0], mac: '0A:58:0A:F4:00:05' }] };
  expect(validate(upper)).toEqual({ value: upper });
  const bad = validate({ ...ok, generation: 0 }) as { error?: { instancePath: string }[] };
  expect(bad.error?.map((e) => e.instancePath)).toEqual(['/generation']);
});

test('a release query carries its generation as text; the answer has it as a number', () => {
  expect(acceptReleaseQuery({ network: 'ferry', ifName: 'eth0', generation: '42' })).toEqual({
    network: 'ferry',
    ifName: 'eth0',
    generation: 42,
  });
  // Forms zod's coercion also takes, or refuses with its own words, are left to it.
  for (const generation of ['042', '1e3', '0x10', ' 4', '0', '-1', ['1', '2']])
    expect(acceptReleaseQuery({ network: 'ferry', ifName: 'eth0', generation })).toBeUndefined();
});
