import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PciDeviceInfoSchema, pciDeviceInfoOf } from '@ferry/shared-types/kube/device-info';
import { expect, test } from 'vitest';
import { tempDir } from '../testing/harness';
import { DeviceInfoFiles } from './device-info-files';

const VF = '0000:3b:02.0';

test("Allocate writes the spec's file (its directory made when missing); a release removes it, unless the device was allocated again since its holder took it", (t) => {
  const dir = join(tempDir(t), 'devinfo', 'dp');
  let nowMs = 1000;
  const files = new DeviceInfoFiles(dir, 'ferry.dev/sriov', () => nowMs);
  files.write(VF, pciDeviceInfoOf(VF, '0000:3b:00.0'));
  const path = join(dir, `ferry.dev-sriov-${VF}-device.json`);
  expect(files.pathOf(VF)).toBe(path);
  expect(readdirSync(dir)).toEqual([`ferry.dev-sriov-${VF}-device.json`]);
  const written = JSON.parse(readFileSync(path, 'utf8'));
  expect(written).toEqual({
    type: 'pci',
    version: '1.1.0',
    pci: { 'pci-address': VF, 'pf-pci-address': '0000:3b:00.0' },
  });
  expect(PciDeviceInfoSchema.parse(written)).toEqual(written);

  // The pod that held it since 500 (before this Allocate) is deleted; the kubelet gave the device to the next
  // pod at 1000, and the old pod's DEL comes after: the next pod's file stays.
  files.released(VF, 500);
  expect(existsSync(path)).toBe(true);
  // The next pod's own DEL (it took the device at 1500).
  nowMs = 2000;
  files.released(VF, 1500);
  expect(existsSync(path)).toBe(false);
  // Released again (a second DEL), or released with no file: nothing to do.
  files.released(VF, 1500);

  files.write(VF, pciDeviceInfoOf(VF));
  expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({ type: 'pci', version: '1.1.0', pci: { 'pci-address': VF } });
  files.removeAll();
  expect(readdirSync(dir)).toEqual([]);
});
