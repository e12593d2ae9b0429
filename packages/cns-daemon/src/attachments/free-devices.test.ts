/**
 * The devices an attachment takes from the node (free-devices.ts): a conflist's count of a group, held to
 * the namespace bindings; a device the annotation names must be free. Through Attachments.allocate.
 */
import { Code } from '@ferry/shared-types/errors';
import { expect, test } from 'vitest';
import { delegated, request } from '../testing/attachments-world';
import { FE1, nics, refusal, TEAM_A, TEAM_B, useTenantNode } from '../testing/nic-choice-world';

test("the conflist's delegatedNICs: a bound group serves its namespaces only; an unbound one anyone, as without Kubernetes", (t) => {
  const w = useTenantNode(t);
  const ask = { group: 'frontend', count: 1 };
  expect(refusal(() => w.attachments.allocate(request('c1', { pod: TEAM_B, delegatedNICs: ask })))).toEqual({
    code: Code.InvalidPodIntent,
    reason: 'not-allowed',
    msg: 'allocate delegated NICs of group "frontend" for pod team-b/api-7c9b45d8f-q2xkp: the group is bound to other namespaces',
  });
  // No pod at all (podman): a bound group is no one's but its namespaces'.
  expect(refusal(() => w.attachments.allocate(request('c2', { delegatedNICs: ask }))).reason).toBe('not-allowed');
  expect(delegated(w.attachments.allocate(request('c3', { pod: TEAM_A, delegatedNICs: ask })).plan)).toHaveLength(1);
});

test('a device the annotation names that another pod holds is 106, naming it', (t) => {
  const w = useTenantNode(t);
  w.attachments.allocate(request('c1', { pod: TEAM_A }), nics([{ mac: FE1 }]));
  const next = { namespace: 'team-a', name: 'web-5d8f7c9b4-other' };
  expect(refusal(() => w.attachments.allocate(request('c2', { pod: next }), nics([{ mac: FE1 }])))).toEqual({
    code: Code.DeviceUnavailable,
    reason: 'unavailable',
    msg: `pod team-a/web-5d8f7c9b4-other: annotation ferry.dev/nics: [0].mac: device ${FE1} is held by another pod`,
  });
});
