/**
 * Groups served to the kubelet (kubelet-grant.ts): a pod gets exactly the devices the kubelet allocated to
 * it, placed, named and addressed by its annotation; none from the free pool, a conflist's count or a
 * reservation. Through Attachments.allocate on a real SQLite file.
 */
import { Code } from '@ferry/shared-types/errors';
import { expect, test } from 'vitest';
import { commitOf, delegated, failure, request, stateOf } from '../testing/attachments-world';
import {
  BE1,
  FE1,
  FE2,
  FE3,
  FRONTEND,
  kubelet,
  nics,
  OTHER,
  POD,
  states,
  useServedNode,
} from '../testing/nic-choice-world';

test("the pod gets exactly the kubelet's devices (not the free pool's first), whatever the conflist's count; none without an allocation", (t) => {
  const w = useServedNode(t);
  const { plan } = w.attachments.allocate(
    request('c1', { pod: POD, delegatedNICs: { group: 'frontend', count: 2 } }),
    undefined,
    kubelet({ frontend: [FE3] }),
  );
  expect(plan.nics.map((n) => [n.nicType, n.ifName])).toEqual([
    ['InfraNIC', 'eth0'],
    ['DelegatedNIC', 'net1'],
  ]);
  expect(delegated(plan)).toEqual([expect.objectContaining({ mac: FE3, hostIfName: 'ens1f2', addresses: [] })]);
  expect(states(w)).toEqual(['free', 'free', 'assigned', 'free']);
  // Allocated nothing (the pod has no resources.limits), or no pod at all (no K8S_POD_* args): none of
  // the group, though two are free; a group that is not served is given by the conflist as before.
  const none = w.attachments.allocate(request('c2', { pod: OTHER, delegatedNICs: FRONTEND }), undefined, kubelet({}));
  expect(none.plan.nics.map((n) => n.nicType)).toEqual(['InfraNIC']);
  expect(w.attachments.allocate(request('c3', { delegatedNICs: FRONTEND })).plan.nics).toHaveLength(1);
  const backend = w.attachments.allocate(
    request('c4', { pod: OTHER, delegatedNICs: { group: 'backend', count: 1 } }),
    undefined,
    kubelet({}),
  );
  expect(delegated(backend.plan).map((n) => n.mac)).toEqual([BE1]);
  // Released like any attachment: the device is free again, for whichever pod the kubelet gives it next.
  w.attachments.commit('c1', commitOf(plan));
  w.attachments.release('c1', 'ferry', 'eth0');
  expect(stateOf(w, FE3)).toBe('free');
});

test('the annotation places, names and addresses the allocated devices; those it does not mention go to eth0', (t) => {
  const w = useServedNode(t);
  const asked = nics([
    { group: 'frontend', ifName: 'fe0', addresses: ['198.51.100.5/28'] },
    { group: 'frontend', network: 'raw', ifName: 'net7' },
  ]);
  const allocation = kubelet({ frontend: [FE2, FE1, FE3] });
  const { plan } = w.attachments.allocate(request('c1', { pod: POD }), asked, allocation);
  // In ID order: FE1 to the first entry, FE2 to the secondary network's entry, FE3 (unmentioned) to eth0.
  expect(delegated(plan).map((n) => [n.ifName, n.mac, n.addresses])).toEqual([
    ['fe0', FE1, [{ family: 4, address: '198.51.100.5/28' }]],
    ['net1', FE3, []],
  ]);
  const { plan: secondary } = w.attachments.allocate(
    request('c1', { pod: POD, network: 'raw', ifName: 'net7' }),
    asked,
    allocation,
  );
  expect(secondary.nics).toEqual([expect.objectContaining({ ifName: 'net7', mac: FE2 })]);
  expect(states(w)).toEqual(['assigned', 'assigned', 'assigned', 'free']);
});

test("a secondary network: the runtime's deviceID (a MAC, the plugin's device ID) or the conflist's group, from the allocation only", (t) => {
  const w = useServedNode(t);
  const net1 = (containerId: string, extra: Parameters<typeof request>[1] = {}) =>
    request(containerId, { network: 'raw', ifName: 'net1', pod: POD, ...extra });
  const { plan } = w.attachments.allocate(
    net1('m1', { deviceId: FE2.toUpperCase() }),
    undefined,
    kubelet({ frontend: [FE2] }),
  );
  expect(plan.nics).toEqual([expect.objectContaining({ ifName: 'net1', mac: FE2 })]);
  const { plan: conflist } = w.attachments.allocate(
    net1('m2', { delegatedNICs: FRONTEND }),
    undefined,
    kubelet({ frontend: [FE3] }),
  );
  expect(conflist.nics).toEqual([expect.objectContaining({ ifName: 'net1', mac: FE3 })]);
  expect(
    failure(() => w.attachments.allocate(net1('m3', { delegatedNICs: FRONTEND }), undefined, kubelet({}))),
  ).toEqual({
    code: Code.DeviceUnavailable,
    msg: 'allocate attachment m3/net1 of network "raw" for pod team-a/web-5d8f7c9b4-x2kqp: group "frontend" is the resource ferry.dev/frontend, and the kubelet allocated the pod none (left) (ask with resources.limits: {ferry.dev/frontend: 1})',
  });
  expect(
    failure(() => w.attachments.allocate(net1('m4', { deviceId: FE1 }), undefined, kubelet({ frontend: [FE3] }))),
  ).toEqual({
    code: Code.InvalidPodIntent,
    msg: `allocate attachment m4/net1 of network "raw" for pod team-a/web-5d8f7c9b4-x2kqp: device ${FE1} (runtimeConfig.deviceID) is of ferry.dev/frontend, and the kubelet did not allocate it to this pod`,
  });
});

test.for([
  [
    'more devices of the group than the kubelet allocated',
    [{ group: 'frontend' }, { group: 'frontend', ifName: 'fe1' }],
    { frontend: [FE1] },
    Code.DeviceUnavailable,
    'pod team-a/web-5d8f7c9b4-x2kqp: annotation ferry.dev/nics: [1].group: group "frontend" is the resource ferry.dev/frontend, which the kubelet allocates: it allocated this pod 1, fewer than the annotation asks for (ask with resources.limits: {ferry.dev/frontend: N})',
  ],
  [
    'a device by MAC that the kubelet did not allocate to the pod',
    [{ mac: FE2 }],
    { frontend: [FE1] },
    Code.InvalidPodIntent,
    `pod team-a/web-5d8f7c9b4-x2kqp: annotation ferry.dev/nics: [0].mac: device ${FE2} is of ferry.dev/frontend, which the kubelet allocates, and the kubelet did not allocate it to this pod`,
  ],
  [
    'an allocation naming a device ferryd does not have in that group',
    undefined,
    { frontend: [BE1] },
    Code.InvalidPodIntent,
    `pod team-a/web-5d8f7c9b4-x2kqp: the kubelet allocated ferry.dev/frontend device ${BE1}, which is not a device of group "frontend" in ferryd's inventory`,
  ],
] as const)('refused, storing nothing: %s', ([, annotation, allocation, code, msg], t) => {
  const w = useServedNode(t);
  const req = request('c1', { pod: POD });
  expect(
    failure(() => w.attachments.allocate(req, annotation ? nics(annotation) : undefined, kubelet(allocation))),
  ).toEqual({
    code,
    msg,
  });
  expect(failure(() => w.attachments.get('c1')).code).toBe(Code.EndpointNotFound);
  expect(states(w)).toEqual(['free', 'free', 'free', 'free']);
});

test('a device the kubelet allocated is never given to another pod: held, it is 106 until its DEL; reservations of a served group are refused', (t) => {
  const w = useServedNode(t);
  const first = w.attachments.allocate(request('c1', { pod: POD }), undefined, kubelet({ frontend: [FE1] }));
  w.attachments.commit('c1', commitOf(first.plan));
  // The kubelet gave FE1 to the next pod before the first one's DEL ran.
  expect(
    failure(() => w.attachments.allocate(request('c2', { pod: OTHER }), undefined, kubelet({ frontend: [FE1] }))),
  ).toEqual({
    code: Code.DeviceUnavailable,
    msg: `device ${FE1} (ferry.dev/frontend, allocated by the kubelet) is held by another pod`,
  });
  // Asked by another pod's annotation, by MAC or group, without an allocation: refused, not taken from the pool.
  expect(
    failure(() => w.attachments.allocate(request('c3', { pod: OTHER }), nics([{ mac: FE2 }]), kubelet({}))).code,
  ).toBe(Code.InvalidPodIntent);
  expect(failure(() => w.inventory.reserve(FE2, { ...OTHER, pod: OTHER.name, addresses: [], routes: [] }))).toEqual({
    code: Code.InvalidConfig,
    msg: `reserve device ${FE2}: its group "frontend" is the resource ferry.dev/frontend, which the kubelet allocates: the pod asks with resources.limits`,
  });
  expect(states(w)).toEqual(['assigned', 'free', 'free', 'free']);
});

test('the namespace bindings still hold: a served group bound to other namespaces is refused even when the kubelet allocated it', (t) => {
  const w = useServedNode(t, { deviceGroups: [{ group: 'frontend', namespaces: ['team-b'] }] });
  expect(
    failure(() => w.attachments.allocate(request('c1', { pod: POD }), undefined, kubelet({ frontend: [FE1] }))),
  ).toEqual({
    code: Code.InvalidPodIntent,
    msg: 'pod team-a/web-5d8f7c9b4-x2kqp: the kubelet allocated it ferry.dev/frontend, but the group is bound to other namespaces',
  });
  // An annotation may name a served group bound to no namespace (the kubelet's allocation is the request).
  const open = useServedNode(t);
  const { plan } = open.attachments.allocate(
    request('c1', { pod: POD }),
    nics([{ group: 'frontend', ifName: 'fe0' }]),
    kubelet({ frontend: [FE2] }),
  );
  expect(delegated(plan).map((n) => [n.ifName, n.mac])).toEqual([['fe0', FE2]]);
});
