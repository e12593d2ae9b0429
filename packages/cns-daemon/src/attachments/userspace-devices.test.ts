/**
 * Userspace devices (a vfio-bound VF, no netdev) through Attachments.allocate on a real SQLite file: the
 * plan says so and gives its PCI address, no address from any pool reaches it, and a group asked for as
 * the other kind is refused (116) storing nothing.
 */
import { Code } from '@ferry/shared-types/errors';
import { expect, type TestContext, test } from 'vitest';
import { failure, request, useAttachments, type World } from '../testing/attachments-world';
import { nics, refusal, TEAM_A } from '../testing/nic-choice-world';

const VF = '0000:3b:02.1';
const stateOf = (w: World) => w.inventory.list().find((d) => d.id === VF)?.state;

function useUserspaceNode(t: TestContext): World {
  const w = useAttachments(t, {
    networks: [
      { name: 'ferry', ipv4: { subnet: '10.244.1.0/24' } },
      { name: 'dpdk-net', infraNIC: false, ipv4: { subnet: '192.168.60.0/24' } },
    ],
    delegatedDevices: [{ drivers: ['vfio-pci'], group: 'dpdk' }],
    tenancy: { deviceGroups: [{ group: 'dpdk', namespaces: ['team-a'] }], staticAddresses: [] },
  });
  w.devices.upsert(VF, undefined, 'dpdk', undefined);
  w.devices.setPresence(VF, true, { atMs: w.clock.now });
  return w;
}

test('asked with userspace: true, the plan holds it by PCI address, with no address or route', (t) => {
  const w = useUserspaceNode(t);
  const { plan } = w.attachments.allocate(request('c1', { pod: TEAM_A }), nics([{ group: 'dpdk', userspace: true }]));
  expect(plan.nics[1]).toEqual({
    nicType: 'DelegatedNIC',
    ifName: 'net1',
    endpointId: 'c1-net1',
    userspace: true,
    pciAddress: VF,
    addresses: [],
    routes: [],
  });
  expect(stateOf(w)).toBe('assigned');
});

test("a secondary network's userspace device takes nothing from the network's pool", (t) => {
  const w = useUserspaceNode(t);
  const req = request('c2', {
    network: 'dpdk-net',
    ifName: 'net1',
    delegatedNICs: { group: 'dpdk', count: 1 },
    pod: TEAM_A,
  });
  const { plan } = w.attachments.allocate(req);
  expect(plan.nics).toEqual([expect.objectContaining({ userspace: true, pciAddress: VF, addresses: [] })]);
  // The record reads the pool itself: nothing was assigned from it.
  expect(w.attachments.get('c2').interfaces).toEqual([expect.objectContaining({ userspace: true, addresses: [] })]);
});

test('the group asked for as a netdev is 116, storing nothing', (t) => {
  const w = useUserspaceNode(t);
  expect(refusal(() => w.attachments.allocate(request('c3', { pod: TEAM_A }), nics([{ group: 'dpdk' }])))).toEqual({
    code: Code.InvalidPodIntent,
    reason: 'malformed',
    msg: 'pod team-a/web-5d8f7c9b4-x2kqp: annotation ferry.dev/nics: [0].group: device group "dpdk" is a userspace device (bound to vfio-pci, no netdev), asked for as a netdev: ask with "userspace": true',
  });
  expect(failure(() => w.attachments.get('c3')).code).toBe(Code.EndpointNotFound);
  expect(stateOf(w)).toBe('free');
});
