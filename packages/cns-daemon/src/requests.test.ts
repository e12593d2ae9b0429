import { CommitRequestSchema, ReleaseQuerySchema } from '@ferry/shared-types/api/endpoints';
import { expect, test } from 'vitest';
import { validatorCompiler } from './requests';

const commit = validatorCompiler({ schema: CommitRequestSchema, method: 'PUT', url: '/x', httpPart: 'body' });
const releaseQuery = validatorCompiler({
  schema: ReleaseQuerySchema,
  method: 'DELETE',
  url: '/x',
  httpPart: 'querystring',
});
const ok = {
  network: 'ferry',
  ifName: 'eth0',
  generation: 1,
  nics: [{ ifName: 'eth0', mac: '0a:58:0a:f4:00:05', containerIfIndex: 2 }],
};

test('a request the generated check takes is the value itself', () => {
  const r = commit(ok) as { value?: unknown };
  expect(r).toEqual({ value: ok });
  expect(r.value).toBe(ok);
});

test('a request the check refuses goes to the schema, which words the error', () => {
  // Upper case is zod's mac() too.
  const upper = { ...ok, nics: [{ ...ok.nics[0], mac: '0A:58:0A:F4:00:05' }] };
  expect(commit(upper)).toEqual({ value: upper });
  const bad = commit({ ...ok, generation: 0 }) as { error?: { instancePath: string }[] };
  expect(bad.error?.map((e) => e.instancePath)).toEqual(['/generation']);
  // An unknown key: the check refuses it, zod words it.
  const extra = commit({ ...ok, extra: 1 }) as { error?: unknown[] };
  expect(extra.error).toHaveLength(1);
});

test('a release query carries its generation as text; the schema gives it as a number', () => {
  expect(releaseQuery({ network: 'ferry', ifName: 'eth0', generation: '42' })).toEqual({
    value: { network: 'ferry', ifName: 'eth0', generation: 42 },
  });
  const plain = { network: 'ferry', ifName: 'eth0', hostVethDeleted: 'true' };
  expect((releaseQuery(plain) as { value?: unknown }).value).toBe(plain);
  for (const generation of ['0', '-1', '1.5', ['1', '2']]) {
    expect(releaseQuery({ network: 'ferry', ifName: 'eth0', generation })).toHaveProperty('error');
  }
});
