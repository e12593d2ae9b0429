/** Each selector on a fake sysfs tree: two PFs of two vendors, their VFs with two drivers, an IB function. */
import type { DelegatedDeviceConfig } from '@ferry/shared-types/config/ferryd';
import { expect, type TestContext, test } from 'vitest';
import { SysfsTree } from '../../../../test/fixtures/sysfs';
import { tempDir } from '../testing/harness';
import { DeviceMatcher } from './selectors';
import { Sysfs } from './sysfs';

const INTEL_PF = '0000:3b:00.0';
const MLX_PF = '0000:5e:00.0';
const IB = '0000:af:00.0';
const intelVf = (i: number) => `0000:3b:02.${i}`;
const mlxVf = (i: number) => `0000:5e:00.${i + 2}`;

function useFacts(t: TestContext) {
  const tree = new SysfsTree(tempDir(t));
  tree.addFunction({ address: INTEL_PF, deviceId: '1593', driver: 'ice', netdev: 'ens1f0' });
  for (let i = 0; i < 6; i++)
    tree.addVf({
      address: intelVf(i),
      pf: INTEL_PF,
      vfIndex: i,
      driver: i < 4 ? 'iavf' : 'vfio-pci',
      netdev: `ens1f0v${i}`,
    });
  tree.addFunction({ address: MLX_PF, vendor: '15b3', deviceId: '101d', driver: 'mlx5_core', netdev: 'ens2f0' });
  for (let i = 0; i < 2; i++)
    tree.addVf({
      address: mlxVf(i),
      pf: MLX_PF,
      vfIndex: i,
      vendor: '15b3',
      deviceId: '101e',
      driver: 'mlx5_core',
      netdev: `ens2f0v${i}`,
    });
  tree.addFunction({ address: IB, vendor: '15b3', deviceId: '1017', driver: 'mlx5_core', netdev: 'ib0', arpType: 32 });
  const sysfs = new Sysfs(tree.root);
  const all = sysfs
    .functions()
    .map((fn) => ({ ifName: fn.netdev ?? '', mac: '02:00:00:00:00:01', linkType: 'ether', fn }));
  /** The addresses an entry with `selectors` selects. */
  return (selectors: Partial<DelegatedDeviceConfig>) => {
    const m = new DeviceMatcher({ group: 'g', nicType: 'DelegatedNIC', ...selectors });
    return all.filter((d) => m.matches(d)).map((d) => d.fn.address);
  };
}

test('vendors, devices, drivers, linkTypes: each selects its functions; PFs that have VFs never', (t) => {
  const select = useFacts(t);
  expect(select({ vendors: ['15B3'] })).toEqual([mlxVf(0), mlxVf(1), IB]);
  expect(select({ devices: ['1889'] })).toEqual([0, 1, 2, 3, 4, 5].map(intelVf));
  expect(select({ drivers: ['vfio-pci'] })).toEqual([intelVf(4), intelVf(5)]);
  expect(select({ linkTypes: ['infiniband'] })).toEqual([IB]);
  // Every selector given must match: Mellanox functions bound to mlx5_core of the Ethernet link type.
  expect(select({ vendors: ['15b3'], drivers: ['mlx5_core'], linkTypes: ['ether'] })).toEqual([mlxVf(0), mlxVf(1)]);
});

test('pfNames with VF ranges and rootDevices select VFs by their PF', (t) => {
  const select = useFacts(t);
  expect(select({ pfNames: ['ens1f0#0-3'] })).toEqual([0, 1, 2, 3].map(intelVf));
  expect(select({ pfNames: ['ens1f0#1,4-5', 'ens2f0#1'] })).toEqual([intelVf(1), intelVf(4), intelVf(5), mlxVf(1)]);
  expect(select({ pfNames: ['ens2f0'] })).toEqual([mlxVf(0), mlxVf(1)]);
  expect(select({ rootDevices: [MLX_PF] })).toEqual([mlxVf(0), mlxVf(1)]);
  expect(select({ rootDevices: [INTEL_PF], drivers: ['iavf'] })).toEqual([0, 1, 2, 3].map(intelVf));
  // A function without a PF is its own root; a range never selects it.
  expect(select({ rootDevices: [IB] })).toEqual([IB]);
  expect(select({ pfNames: ['ib0#0'] })).toEqual([]);
});

test('a device sysfs does not know (a veth) matches no selector, but its MAC and name still match', () => {
  const veth = { ifName: 'dev0', mac: '02:00:00:00:00:07', linkType: 'ether', fn: undefined };
  const m = (e: Partial<DelegatedDeviceConfig>) => new DeviceMatcher({ group: 'g', nicType: 'DelegatedNIC', ...e });
  expect(m({ drivers: ['veth'] }).matches(veth)).toBe(false);
  expect(m({ mac: '02:00:00:00:00:07' }).matches(veth)).toBe(true);
  expect(m({ namePattern: '^dev' }).matches(veth)).toBe(true);
  expect(m({ namePattern: '^dev' }).matches({ ...veth, linkType: 'none' })).toBe(false);
});
