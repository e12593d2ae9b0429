import { CniError, Code } from '@ferry/shared-types/errors';
import pino from 'pino';
import { expect, test } from 'vitest';
import { FakePodApi } from '../testing/fake-pod-api';
import { PodCache } from './pod-cache';
import { podIntentOf } from './pod-intent';

const log = pino({ level: 'silent' });

test('podIntentOf: the NICs asked for, none without the annotation, absent without the pod', async () => {
  const api = new FakePodApi();
  const cache = new PodCache({ api, lookupTimeoutMs: 500, log });
  api.put({
    namespace: 'a',
    name: 'asks',
    uid: 'u1',
    annotations: { 'ferry.dev/nics': '[{"group":"frontend","ifName":"net1"}]' },
  });
  api.put({ namespace: 'a', name: 'plain', uid: 'u2' });
  expect(await podIntentOf(cache, { namespace: 'a', name: 'asks', uid: 'u1' })).toMatchObject({
    kind: 'pod',
    pod: { name: 'asks' },
    nics: [{ group: 'frontend', ifName: 'net1' }],
  });
  expect(await podIntentOf(cache, { namespace: 'a', name: 'plain' })).toMatchObject({ kind: 'pod', nics: undefined });
  expect(await podIntentOf(cache, { namespace: 'a', name: 'nobody' })).toEqual({ kind: 'absent' });
});

test('podIntentOf: a malformed annotation is code 116 naming the pod, the annotation and the problem', async () => {
  const api = new FakePodApi();
  const cache = new PodCache({ api, lookupTimeoutMs: 500, log });
  api.put({
    namespace: 'tenant-a',
    name: 'web-1',
    uid: 'u1',
    annotations: { 'ferry.dev/nics': '[{"group":"a","ifName":"eth0"}]' },
  });
  const err = await podIntentOf(cache, { namespace: 'tenant-a', name: 'web-1' }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(CniError);
  expect(err).toMatchObject({
    code: Code.InvalidPodIntent,
    message:
      'pod tenant-a/web-1: annotation ferry.dev/nics: [0].ifName: is reserved (the loopback or the primary interface)',
  });
});
