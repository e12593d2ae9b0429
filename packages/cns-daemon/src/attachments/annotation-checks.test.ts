/**
 * A pod's `ferry.dev/nics` annotation checked against the node and its namespace's bindings
 * (annotation-checks.ts), through Attachments.allocate on a real SQLite file: every refusal names the pod,
 * the annotation, the entry and the problem, and stores nothing.
 */
import { Code } from '@ferry/shared-types/errors';
import { expect, test } from 'vitest';
import { request } from '../testing/attachments-world';
import {
  BE1,
  expectNothingStored,
  FE1,
  FE2,
  nics,
  PCI_VF1,
  refusal,
  TEAM_A,
  useTenantNode,
  VF1,
} from '../testing/nic-choice-world';

test.for([
  [
    'a group that does not exist',
    [{ group: 'gpu' }],
    'unknown',
    '[0].group: no device group "gpu" on this node (groups namespace team-a may use: frontend, sriov)',
  ],
  [
    "another tenant's group",
    [{ group: 'backend' }],
    'not-allowed',
    '[0].group: namespace team-a may not use device group "backend"',
  ],
  [
    "another tenant's device by its MAC (any spelling)",
    [{ mac: BE1.toUpperCase() }],
    'not-allowed',
    `[0].mac: namespace team-a may not use device ${BE1.toUpperCase()}`,
  ],
  [
    'a MAC no delegatable device has',
    [{ mac: '02:00:00:00:00:99' }],
    'unknown',
    '[0].mac: no delegatable device 02:00:00:00:00:99 on this node',
  ],
  [
    'a PCI address with no device',
    [{ pciAddress: '0000:99:00.0' }],
    'unknown',
    '[0].pciAddress: no delegatable device 0000:99:00.0 on this node',
  ],
  [
    'an unknown network',
    [{ group: 'frontend', network: 'nope' }],
    'unknown',
    '[0].network: ferryd has no network "nope"',
  ],
  [
    "a static address outside the namespace's ranges",
    [{ group: 'frontend', addresses: ['198.51.100.20/28'] }],
    'not-allowed',
    '[0].addresses[0]: 198.51.100.20/28 is outside the ranges of namespace team-a (198.51.100.0/28, 2001:db8:a::/64)',
  ],
  [
    'more devices of a group than are free',
    [{ group: 'frontend' }, { group: 'frontend' }, { group: 'frontend' }],
    'unavailable',
    'asks for 3 devices of group "frontend": 2 free on this node',
  ],
  [
    'one device by MAC and again by PCI address',
    [{ mac: VF1 }, { pciAddress: PCI_VF1 }],
    'unavailable',
    `[1].pciAddress: device ${VF1} is asked for twice`,
  ],
] as const)('refused, storing nothing: %s', ([, annotation, reason, problem], t) => {
  const w = useTenantNode(t);
  const r = refusal(() => w.attachments.allocate(request('c1', { pod: TEAM_A }), nics(annotation)));
  expect(r).toEqual({
    code: reason === 'unavailable' ? Code.DeviceUnavailable : Code.InvalidPodIntent,
    reason,
    msg: `pod team-a/web-5d8f7c9b4-x2kqp: annotation ferry.dev/nics: ${problem}`,
  });
  expectNothingStored(w, 'c1');
});

test('a namespace with no ranges may give no static address; an address another pod holds is refused; the same pod may hold its own again', (t) => {
  const w = useTenantNode(t);
  const other = { namespace: 'team-c', name: 'x' };
  expect(
    refusal(() =>
      w.attachments.allocate(request('c0', { pod: other }), nics([{ mac: FE1, addresses: ['10.9.0.1/24'] }])),
    ),
  ).toEqual({
    code: Code.InvalidPodIntent,
    reason: 'not-allowed',
    msg: 'pod team-c/x: annotation ferry.dev/nics: [0].addresses: namespace team-c may give no static addresses',
  });
  const asks = nics([{ mac: FE1, addresses: ['2001:db8:a::5/64'] }]);
  w.attachments.allocate(request('c1', { pod: TEAM_A }), asks);
  const twin = { namespace: 'team-a', name: 'web-5d8f7c9b4-zzzzz' };
  expect(
    // The same address, spelt otherwise.
    refusal(() =>
      w.attachments.allocate(request('c2', { pod: twin }), nics([{ mac: FE2, addresses: ['2001:db8:a:0:0::5/64'] }])),
    ),
  ).toEqual({
    code: Code.DeviceUnavailable,
    reason: 'unavailable',
    msg: 'pod team-a/web-5d8f7c9b4-zzzzz: annotation ferry.dev/nics: [0].addresses[0]: 2001:db8:a:0:0::5/64 is in use by another pod',
  });
  // The same pod's new sandbox (its old one not yet deleted) asks for its address again: its own.
  const again = refusal(() => w.attachments.allocate(request('c3', { pod: TEAM_A }), asks));
  expect(again.msg).toBe(
    `pod team-a/web-5d8f7c9b4-x2kqp: annotation ferry.dev/nics: [0].mac: device ${FE1} is held by another pod`,
  );
});

test("in-pod names: never the attachment's own CNI_IFNAME, never one the pod's other attachments use", (t) => {
  const w = useTenantNode(t);
  w.attachments.allocate(request('c1', { pod: TEAM_A }), nics([{ group: 'frontend', ifName: 'fe0' }]));
  // A second InfraNIC attachment of the same container, on eth1, with entries that name its network.
  const second = request('c1', { pod: TEAM_A, ifName: 'eth1', network: 'ferry' });
  for (const [ifName, problem] of [
    ['eth1', '"eth1" is the pod\'s primary interface'],
    ['fe0', '"fe0" is already an interface of the pod'],
  ] as const) {
    expect(
      refusal(() => w.attachments.allocate(second, nics([{ group: 'frontend', ifName, network: 'ferry' }]))),
    ).toEqual({
      code: Code.InvalidPodIntent,
      reason: 'malformed',
      msg: `pod team-a/web-5d8f7c9b4-x2kqp: annotation ferry.dev/nics: [0].ifName: ${problem}`,
    });
  }
});
