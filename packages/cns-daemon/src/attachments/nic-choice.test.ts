/**
 * Which devices an attachment gets (nic-choice.ts): from the pod's `ferry.dev/nics` annotation, the
 * runtime's deviceID and the conflist, for an InfraNIC network's attachment and a secondary network's one,
 * through Attachments.allocate on a real SQLite file and a sysfs tree of the test's own. Every refusal
 * stores nothing.
 */
import { Code } from '@ferry/shared-types/errors';
import { expect, test } from 'vitest';
import { commitOf, delegated, failure, request, stateOf } from '../testing/attachments-world';
import {
  BE1,
  expectNothingStored,
  FE1,
  FE2,
  nics,
  PCI_VF1,
  TEAM_A,
  TEAM_B,
  useTenantNode,
  VF1,
} from '../testing/nic-choice-world';

test("a pod's annotation gives its attachment the devices it names, named and addressed as it asks; the conflist's delegatedNICs do not apply", (t) => {
  const w = useTenantNode(t);
  const asked = nics([
    {
      mac: FE2,
      ifName: 'fe0',
      addresses: ['198.51.100.5/28', '2001:db8:a::5/64'],
      gateway: '198.51.100.1',
      routes: [{ dst: '203.0.113.0/24' }, { dst: '2001:db8:b::/48', gw: '2001:db8:a::1' }],
    },
    { group: 'frontend' },
    { pciAddress: PCI_VF1, ifName: 'vf0' },
  ]);
  const req = request('c1', { pod: TEAM_A, delegatedNICs: { group: 'backend', count: 1 } });
  const { plan } = w.attachments.allocate(req, asked);
  expect(plan.nics.map((n) => [n.nicType, n.ifName])).toEqual([
    ['InfraNIC', 'eth0'],
    ['DelegatedNIC', 'fe0'],
    ['DelegatedNIC', 'vf0'],
    ['DelegatedNIC', 'net1'],
  ]);
  expect(delegated(plan)).toEqual([
    {
      nicType: 'DelegatedNIC',
      ifName: 'fe0',
      endpointId: 'c1-fe0',
      mac: FE2,
      hostIfName: 'ens1f1',
      addresses: [
        { family: 4, address: '198.51.100.5/28', gateway: '198.51.100.1' },
        { family: 6, address: '2001:db8:a::5/64' },
      ],
      routes: [
        { dst: '203.0.113.0/24', gw: '198.51.100.1' },
        { dst: '2001:db8:b::/48', gw: '2001:db8:a::1' },
      ],
    },
    expect.objectContaining({ ifName: 'vf0', mac: VF1, hostIfName: 'ens2f0v1', pciAddress: PCI_VF1 }),
    expect.objectContaining({ ifName: 'net1', mac: FE1, addresses: [], routes: [] }),
  ]);
  expect([FE1, FE2, BE1, VF1].map((m) => stateOf(w, m))).toEqual(['assigned', 'assigned', 'free', 'assigned']);
  // An empty annotation is an answer too: no delegated NIC, whatever the conflist asks.
  const { plan: none } = w.attachments.allocate(request('c2', { pod: TEAM_B, delegatedNICs: req.delegatedNICs }), []);
  expect(none.nics.map((n) => n.nicType)).toEqual(['InfraNIC']);
  expect(stateOf(w, BE1)).toBe('free');
});

// --- secondary networks ---------------------------------------------------------------------------

const net1 = (extra: Parameters<typeof request>[1] = {}) =>
  request('m1', { network: 'sriov', ifName: 'net1', pod: TEAM_A, ...extra });

test('a secondary network: the runtime’s deviceID is the attachment, under CNI_IFNAME, addressed from the pool with its prefix and gateway', (t) => {
  const w = useTenantNode(t);
  const { plan } = w.attachments.allocate(net1({ deviceId: PCI_VF1 }));
  expect(plan.nics).toEqual([
    {
      nicType: 'DelegatedNIC',
      ifName: 'net1',
      endpointId: 'm1-net1',
      mac: VF1,
      hostIfName: 'ens2f0v1',
      pciAddress: PCI_VF1,
      addresses: [{ family: 4, address: '192.168.50.2/24', gateway: '192.168.50.1' }],
      routes: [{ dst: '192.168.0.0/16', gw: '192.168.50.1' }],
    },
  ]);
  // Committed and released like any attachment; the device goes back to the group.
  w.attachments.commit('m1', commitOf(plan));
  expect(w.attachments.release('m1', 'sriov', 'net1').released).toHaveLength(1);
  expect(stateOf(w, VF1)).toBe('free');
  expect(w.podsChanged).toEqual(['team-a/web-5d8f7c9b4-x2kqp', 'team-a/web-5d8f7c9b4-x2kqp']);
});

test("a secondary network: the annotation's entry for it (by CNI_IFNAME), with static addresses instead of the pool; else the conflist's one device", (t) => {
  const w = useTenantNode(t);
  const asked = nics([
    { group: 'frontend', ifName: 'fe0' },
    { network: 'sriov', ifName: 'net2', mac: FE2, addresses: ['198.51.100.9/28'] },
  ]);
  const { plan } = w.attachments.allocate(net1({ ifName: 'net2' }), asked);
  expect(plan.nics).toEqual([
    expect.objectContaining({
      ifName: 'net2',
      mac: FE2,
      addresses: [{ family: 4, address: '198.51.100.9/28' }],
      routes: [],
    }),
  ]);
  // Without an entry for it: the conflist's group (one device), from the pool.
  const { plan: fromConflist } = w.attachments.allocate(
    request('m2', { network: 'raw', ifName: 'net1', pod: TEAM_A, delegatedNICs: { group: 'frontend', count: 1 } }),
    asked,
  );
  expect(fromConflist.nics).toEqual([expect.objectContaining({ ifName: 'net1', mac: FE1, addresses: [], routes: [] })]);
});

test.for([
  [
    'nothing names a device',
    () => net1(),
    undefined,
    Code.InvalidConfig,
    'allocate attachment m1/net1 of network "sriov": the network has no InfraNIC, so the attachment is a delegated device, and nothing names one (runtimeConfig.deviceID, a ferry.dev/nics entry for network "sriov", or the conflist\'s delegatedNICs)',
  ],
  [
    'a conflist asking for two devices',
    () => net1({ delegatedNICs: { group: 'frontend', count: 2 } }),
    undefined,
    Code.InvalidConfig,
    'invalid network config: delegatedNICs.count: attachment m1/net1 of network "sriov" is one device (network "sriov" has no InfraNIC); ask for 1',
  ],
  [
    'a deviceID that is not a PCI address',
    () => net1({ deviceId: 'mlx5_core.sf.4' }),
    undefined,
    Code.InvalidConfig,
    'invalid network config: runtimeConfig.deviceID "mlx5_core.sf.4" of attachment m1/net1 of network "sriov": not a PCI address like 0000:18:02.5 (or a MAC, a device ID of ferry.dev/<group>)',
  ],
  [
    'a deviceID of no delegatable device',
    () => net1({ deviceId: '0000:99:00.0' }),
    undefined,
    Code.InvalidPodIntent,
    'allocate attachment m1/net1 of network "sriov": no delegatable device at PCI address 0000:99:00.0 (runtimeConfig.deviceID) on this node',
  ],
  [
    'an entry that asks for another device than the runtime gives',
    () => net1({ deviceId: PCI_VF1 }),
    [{ network: 'sriov', mac: FE1 }],
    Code.InvalidPodIntent,
    `pod team-a/web-5d8f7c9b4-x2kqp: annotation ferry.dev/nics: [0] asks for ${FE1}, but the runtime gives attachment m1/net1 of network "sriov" device ${PCI_VF1} (runtimeConfig.deviceID)`,
  ],
  [
    'two entries for the network, neither naming its attachment',
    () => net1(),
    [
      { network: 'sriov', group: 'frontend' },
      { network: 'sriov', mac: FE2 },
    ],
    Code.InvalidPodIntent,
    'pod team-a/web-5d8f7c9b4-x2kqp: annotation ferry.dev/nics: entries [0], [1] are all for network "sriov": give each the ifName of its attachment',
  ],
  [
    "a deviceID of another tenant's group",
    () => net1({ deviceId: PCI_VF1, pod: TEAM_B }),
    undefined,
    Code.InvalidPodIntent,
    `allocate attachment m1/net1 of network "sriov" for pod team-b/api-7c9b45d8f-q2xkp: device ${PCI_VF1} is of group "sriov", which is bound to other namespaces`,
  ],
] as const)('a secondary network refuses %s, storing nothing', ([, req, annotation, code, msg], t) => {
  const w = useTenantNode(t);
  expect(failure(() => w.attachments.allocate(req(), annotation ? nics(annotation) : undefined))).toEqual({
    code,
    msg,
  });
  expectNothingStored(w, 'm1');
});
