import { expect, test } from 'vitest';
import { deviceKindProblem, GroupKinds, kindOfEntry } from './device-kind';

test('drivers ["vfio-pci"] selects userspace devices; any other entry netdevs', () => {
  expect(kindOfEntry({ group: 'dpdk', drivers: ['vfio-pci'] })).toBe('userspace');
  expect(kindOfEntry({ group: 'sriov', drivers: ['iavf', 'mlx5_core'] })).toBe('netdev');
  expect(kindOfEntry({ group: 'frontend' })).toBe('netdev');
  expect(kindOfEntry({ group: 'odd', drivers: ['vfio-pci', 'iavf'] })).toBe('mixed');
  const kinds = new GroupKinds([{ group: 'dpdk', drivers: ['vfio-pci'] }, { group: 'frontend' }]);
  expect([kinds.of('dpdk'), kinds.of('frontend'), kinds.of('unknown')]).toEqual(['userspace', 'netdev', 'netdev']);
});

test('a group of both kinds, or an entry of both, is refused naming the group and the entries', () => {
  expect(deviceKindProblem([{ group: 'dpdk', drivers: ['vfio-pci'] }, { group: 'frontend' }])).toBeUndefined();
  expect(
    deviceKindProblem([
      { group: 'dpdk', drivers: ['vfio-pci'] },
      { group: 'dpdk', drivers: ['iavf'] },
    ]),
  ).toBe(
    'delegatedDevices[1]: group "dpdk" would hold netdev devices, but delegatedDevices[0] gives it userspace devices; a group holds one kind (userspace: drivers ["vfio-pci"]; netdev: any other selector): put them in two groups',
  );
  expect(deviceKindProblem([{ group: 'x', drivers: ['iavf', 'vfio-pci'] }])).toMatch(
    /^delegatedDevices\[0\]\.drivers: \["iavf","vfio-pci"\] mixes userspace drivers \(vfio-pci/,
  );
});
