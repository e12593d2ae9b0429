/** The sysfs reader on a fake tree of SR-IOV's shape: a PF, a netdev VF, a vfio-bound VF, a plain NIC. */
import { expect, type TestContext, test } from 'vitest';
import { SysfsTree } from '../../../../test/fixtures/sysfs';
import { tempDir } from '../testing/harness';
import { Sysfs } from './sysfs';

const PF = '0000:3b:00.0';
const VF0 = '0000:3b:02.0';
const VF1 = '0000:3b:02.1';
const NIC = '0000:18:00.0';

function useTree(t: TestContext): { tree: SysfsTree; sysfs: Sysfs } {
  const tree = new SysfsTree(tempDir(t));
  tree.addFunction({ address: PF, deviceId: '1593', driver: 'ice', numaNode: 1, netdev: 'ens1f0' });
  tree.addVf({ address: VF0, pf: PF, vfIndex: 0, driver: 'iavf', numaNode: 1, netdev: 'ens1f0v0', iommuGroup: 77 });
  tree.addVf({ address: VF1, pf: PF, vfIndex: 1, driver: 'vfio-pci', numaNode: 1, iommuGroup: 78 });
  tree.addFunction({ address: NIC, vendor: '15B3', deviceId: '101d', driver: 'mlx5_core', netdev: 'ib0', arpType: 32 });
  return { tree, sysfs: new Sysfs(tree.root) };
}

test('each PCI function: IDs, driver, NUMA node, PF and VF index, netdevs, link type, IOMMU group', (t) => {
  const { sysfs } = useTree(t);
  expect(sysfs.functions()).toEqual([
    { address: NIC, vendor: '15b3', deviceId: '101d', driver: 'mlx5_core', netdev: 'ib0', linkType: 'infiniband' },
    { address: PF, vendor: '8086', deviceId: '1593', driver: 'ice', numaNode: 1, netdev: 'ens1f0', linkType: 'ether' },
    {
      address: VF0,
      vendor: '8086',
      deviceId: '1889',
      driver: 'iavf',
      numaNode: 1,
      pf: { address: PF, vfIndex: 0, netdev: 'ens1f0' },
      netdev: 'ens1f0v0',
      linkType: 'ether',
      iommuGroup: '77',
    },
    {
      address: VF1,
      vendor: '8086',
      deviceId: '1889',
      driver: 'vfio-pci',
      numaNode: 1,
      pf: { address: PF, vfIndex: 1, netdev: 'ens1f0' },
      iommuGroup: '78',
    },
  ]);
});

test('a renamed netdev, a rebound driver and an absent address read as they are now', (t) => {
  const { tree, sysfs } = useTree(t);
  tree.setNetdev(VF0, 'vf-renamed');
  tree.setDriver(VF0, undefined);
  expect(sysfs.function(VF0)).toMatchObject({ netdev: 'vf-renamed' });
  expect(sysfs.function(VF0)?.driver).toBeUndefined();
  expect(sysfs.netdevsAt(VF0)).toEqual(['vf-renamed']);
  expect(sysfs.function('0000:99:00.0')).toBeUndefined();
  expect(sysfs.netdevsAt('0000:99:00.0')).toEqual([]);
  // No tree at all (sysfsRoot pointing nowhere): no functions, not an error.
  expect(new Sysfs('/nonexistent-sysfs').functions()).toEqual([]);
});
