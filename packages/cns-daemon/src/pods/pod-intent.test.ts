import { CniError, Code } from '@ferry/shared-types/errors';
import pino from 'pino';
import { expect, test } from 'vitest';
import { FakePodApi } from '../testing/fake-pod-api';
import { PodCache } from './pod-cache';
import { podIntentOf } from './pod-intent';

/** A cache whose API server has one pod per entry of `nics`: namespace/name → its ferry.dev/nics, if any. */
function cacheOf(nics: Record<string, string | undefined>): PodCache {
  const api = new FakePodApi();
  for (const [key, text] of Object.entries(nics)) {
    const [namespace = '', name = ''] = key.split('/');
    api.put({ namespace, name, uid: `uid-${name}`, annotations: text === undefined ? {} : { 'ferry.dev/nics': text } });
  }
  return new PodCache({ api, lookupTimeoutMs: 500, log: pino({ level: 'silent' }) });
}

test('podIntentOf: the NICs asked for, none without the annotation, absent without the pod', async () => {
  const cache = cacheOf({ 'a/asks': '[{"group":"frontend","ifName":"net1"}]', 'a/plain': undefined });
  expect(await podIntentOf(cache, { namespace: 'a', name: 'asks', uid: 'uid-asks' })).toMatchObject({
    kind: 'pod',
    pod: { name: 'asks' },
    nics: [{ group: 'frontend', ifName: 'net1' }],
  });
  expect(await podIntentOf(cache, { namespace: 'a', name: 'plain' })).toMatchObject({ kind: 'pod', nics: undefined });
  expect(await podIntentOf(cache, { namespace: 'a', name: 'nobody' })).toEqual({ kind: 'absent' });
});

test('podIntentOf: a malformed annotation is code 116 naming the pod, the annotation and the problem', async () => {
  const cache = cacheOf({ 'tenant-a/web-1': '[{"group":"a","ifName":"eth0"}]' });
  const err = await podIntentOf(cache, { namespace: 'tenant-a', name: 'web-1' }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(CniError);
  expect(err).toMatchObject({
    code: Code.InvalidPodIntent,
    message:
      'pod tenant-a/web-1: annotation ferry.dev/nics: [0].ifName: is reserved (the loopback or the primary interface)',
  });
});
