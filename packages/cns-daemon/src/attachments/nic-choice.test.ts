/**
 * Which devices an attachment gets from the pod's `ferry.dev/nics` annotation, the namespace bindings
 * (tenancy), the runtime's deviceID and the conflist, through Attachments.allocate on a real SQLite file
 * and a sysfs tree of the test's own. Every refusal stores nothing.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Code } from '@ferry/shared-types/errors';
import { type PodNics, parsePodNics } from '@ferry/shared-types/kube/pod-nics';
import { expect, type TestContext, test } from 'vitest';
import {
  addDevice,
  commitOf,
  delegated,
  failure,
  request,
  stateOf,
  useAttachments,
  type World,
} from '../testing/attachments-world';
import { tempDir } from '../testing/harness';
import { PodNicRefusal } from './nic-choice';

const FE1 = '02:00:00:00:fe:01';
const FE2 = '02:00:00:00:fe:02';
const BE1 = '02:00:00:00:be:01';
const VF1 = '02:00:00:00:0f:01';
const PCI_VF1 = '0000:18:02.1';
const TEAM_A = { namespace: 'team-a', name: 'web-5d8f7c9b4-x2kqp' };
const TEAM_B = { namespace: 'team-b', name: 'api-7c9b45d8f-q2xkp' };

/**
 * A node with groups frontend (team-a's), backend (team-b's) and sriov (team-a's, by PCI address), a
 * secondary network "sriov" with a pool and one without, and static ranges for team-a.
 */
function useTenantNode(t: TestContext): World {
  const sysfs = tempDir(t);
  // The VF's netdev as sysfs shows it: bus/pci/devices/<addr>/net/<ifname>.
  mkdirSync(join(sysfs, 'bus', 'pci', 'devices', PCI_VF1, 'net', 'ens2f0v1'), { recursive: true });
  const w = useAttachments(t, {
    sysfsRoot: sysfs,
    networks: [
      { name: 'ferry', ipv4: { subnet: '10.244.1.0/24' } },
      {
        name: 'sriov',
        infraNIC: false,
        ipv4: { subnet: '192.168.50.0/24', gateway: '192.168.50.1', routes: [{ dst: '192.168.0.0/16' }] },
      },
      { name: 'raw', infraNIC: false },
    ],
    delegatedDevices: [
      { mac: FE1, group: 'frontend' },
      { mac: FE2, group: 'frontend' },
      { mac: BE1, group: 'backend' },
      { mac: VF1, group: 'sriov' },
    ],
    tenancy: {
      deviceGroups: [
        { group: 'frontend', namespaces: ['team-a'] },
        { group: 'backend', namespaces: ['team-b'] },
        { group: 'sriov', namespaces: ['team-a'] },
      ],
      staticAddresses: [
        { namespaces: ['team-a'], ranges: ['198.51.100.0/28', '2001:db8:a::/64'] },
        { namespaces: ['team-b'], ranges: ['198.51.100.16/28'] },
      ],
    },
  });
  addDevice(w, FE1, 'frontend', 'ens1f0');
  addDevice(w, FE2, 'frontend', 'ens1f1');
  addDevice(w, BE1, 'backend', 'ens3f0');
  addDevice(w, VF1, 'sriov', 'ens2f0v1');
  return w;
}

const nics = (json: unknown): PodNics => {
  const r = parsePodNics(JSON.stringify(json));
  if ('problem' in r) throw new Error(r.problem);
  return r.nics;
};

/** A refusal's code, reason and message. */
function refusal(fn: () => unknown): { code: number; reason?: string; msg: string } {
  try {
    fn();
  } catch (err) {
    if (err instanceof PodNicRefusal) return { code: err.code, reason: err.reason, msg: err.message };
    throw err;
  }
  throw new Error('expected a refusal, nothing was thrown');
}

function expectNothingStored(w: World, containerId: string): void {
  expect(failure(() => w.attachments.get(containerId)).code).toBe(Code.EndpointNotFound);
  for (const mac of [FE1, FE2, BE1, VF1]) expect(stateOf(w, mac), mac).toBe('free');
}

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
    'invalid network config: runtimeConfig.deviceID "mlx5_core.sf.4" of attachment m1/net1 of network "sriov": not a PCI address like 0000:18:02.5',
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
