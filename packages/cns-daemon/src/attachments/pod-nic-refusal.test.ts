/** A refusal's code follows its reason; who asks is named by pod, or by container without one. */
import { Code } from '@ferry/shared-types/errors';
import { expect, test } from 'vitest';
import { request } from '../testing/attachments-world';
import { askerOf, PodNicRefusal, type RefusalReason } from './pod-nic-refusal';

test('none free is 106 (DeviceUnavailable); anything else the pod may not or cannot ask for is 116', () => {
  const codes = (['malformed', 'unknown', 'not-allowed', 'unavailable'] as RefusalReason[]).map((reason) => {
    const r = new PodNicRefusal(reason, 'm');
    return [r.reason, r.code, r.name];
  });
  expect(codes).toEqual([
    ['malformed', Code.InvalidPodIntent, 'PodNicRefusal'],
    ['unknown', Code.InvalidPodIntent, 'PodNicRefusal'],
    ['not-allowed', Code.InvalidPodIntent, 'PodNicRefusal'],
    ['unavailable', Code.DeviceUnavailable, 'PodNicRefusal'],
  ]);
});

test('who asks: the pod when the request names one, else the container', () => {
  expect(askerOf(request('c1', { pod: { namespace: 'team-a', name: 'web' } }))).toEqual({
    namespace: 'team-a',
    name: 'web',
    pod: 'pod team-a/web',
  });
  expect(askerOf(request('c1')).pod).toBe('container c1');
});
