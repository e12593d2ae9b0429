import { pciDeviceInfoOf } from '@ferry/shared-types/kube/device-info';
import { FERRY_ATTACHMENT_KEY, FerryStatusEntrySchema } from '@ferry/shared-types/kube/network-status';
import { describe, expect, test } from 'vitest';
import { interfaceRecord as record } from '../testing/interface-record';
import { ferryEntriesOf, withFerryEntries } from './network-status';
import type { PodView } from './pod';

const pod: PodView = { namespace: 'a', name: 'web-1', uid: 'u1', resourceVersion: '7', annotations: {} };

const infra = record({ containerId: 'c1', ifName: 'eth0' });
const delegated = record({
  containerId: 'c1',
  ifName: 'net1',
  nicType: 'DelegatedNIC',
  endpointId: 'c1-net1',
  addresses: [{ family: 4, address: '172.26.0.10/16' }],
  mac: '02:00:00:00:01:01',
});
const attachment = { network: 'ferry', containerId: 'c1', ifName: 'eth0' };

describe('ferryEntriesOf: Ferry entries from the records', () => {
  test('the InfraNIC (default) and the delegated NIC, addresses without prefix, the attachment under its key', () => {
    expect(ferryEntriesOf([delegated, infra], pod)).toEqual([
      {
        name: 'ferry',
        interface: 'eth0',
        ips: ['10.244.1.5', 'fd00:10:244:1::5'],
        mac: '02:00:00:00:00:05',
        default: true,
        [FERRY_ATTACHMENT_KEY]: attachment,
      },
      {
        name: 'ferry',
        interface: 'net1',
        ips: ['172.26.0.10'],
        mac: '02:00:00:00:01:01',
        default: false,
        [FERRY_ATTACHMENT_KEY]: attachment,
      },
    ]);
  });

  test('only committed interfaces of this pod (by UID too); the newest sandbox of a network and CNI_IFNAME', () => {
    const records = [
      infra,
      record({ containerId: 'c0', ifName: 'eth0', createdAt: '2026-11-30T11:00:00.000Z' }), // an older sandbox
      record({ containerId: 'c2', ifName: 'eth0', state: 'allocated', createdAt: '2026-11-30T13:00:00.000Z' }),
      record({ containerId: 'c3', ifName: 'eth0', pod: { namespace: 'a', name: 'web-1', uid: 'previous-pod' } }),
      record({ containerId: 'c4', ifName: 'eth0', pod: { namespace: 'b', name: 'web-1' } }),
      // A secondary network's attachment (Ferry as a Multus delegate): not the default network.
      record({ containerId: 'c1', ifName: 'net2', network: 'data', attachmentIfName: 'net2', nicType: 'DelegatedNIC' }),
    ];
    const entries = ferryEntriesOf(records, pod);
    expect(entries.map((e) => `${e.name}/${e[FERRY_ATTACHMENT_KEY].containerId}/${e.interface}/${e.default}`)).toEqual([
      'ferry/c1/eth0/true',
      'data/c1/net2/false',
    ]);
  });

  test("a delegated PCI device carries its device-info (NPWG's device information 1.1.0, pci)", () => {
    const vf = record({ ...delegated, deviceMac: '02:00:00:00:0f:01', hostIfName: 'ens2f0v1' });
    const info = pciDeviceInfoOf('0000:18:02.1', '0000:18:00.0');
    const [eth0, net1] = ferryEntriesOf([infra, vf], pod, ({ mac }) =>
      mac === '02:00:00:00:0f:01' ? info : undefined,
    );
    expect(eth0).not.toHaveProperty('device-info');
    expect(net1?.['device-info']).toEqual({
      type: 'pci',
      version: '1.1.0',
      pci: { 'pci-address': '0000:18:02.1', 'pf-pci-address': '0000:18:00.0' },
    });
    expect(FerryStatusEntrySchema.safeParse(net1).success).toBe(true);
  });

  test('a userspace device (no MAC): its PCI address, no mac, no ips', () => {
    const { mac: _, ...vf } = record({ ...delegated, addresses: [], userspace: true, pciAddress: '0000:18:02.3' });
    const info = pciDeviceInfoOf('0000:18:02.3', '0000:18:00.0');
    const [, net1] = ferryEntriesOf([infra, vf], pod, ({ pciAddress }) =>
      pciAddress === '0000:18:02.3' ? info : undefined,
    );
    expect(net1).toEqual({
      name: 'ferry',
      interface: 'net1',
      ips: [],
      default: false,
      'device-info': info,
      [FERRY_ATTACHMENT_KEY]: attachment,
    });
    expect(FerryStatusEntrySchema.safeParse(net1).success).toBe(true);
  });
});

describe("withFerryEntries: Ferry's entries replaced, everyone else's kept", () => {
  const ours = ferryEntriesOf([infra, delegated], pod);
  const multus = {
    name: 'kube-system/macvlan',
    interface: 'net5',
    ips: ['192.168.1.5'],
    mac: '86:1d:96:ff:55:0d',
    dns: {},
  };

  test('no annotation yet: ours; nothing to say: nothing', () => {
    expect(withFerryEntries(undefined, ours)).toEqual({ value: JSON.stringify(ours) });
    expect(withFerryEntries(undefined, [])).toBeUndefined();
  });

  test("another writer's entries stay, byte for byte in content; ours come first", () => {
    const stale = { ...ours[0], ips: ['10.244.1.99'] };
    const change = withFerryEntries(JSON.stringify([multus, stale]), ours);
    expect(JSON.parse(change?.value ?? 'null')).toEqual([...ours, multus]);
  });

  test('what it already says (in any spacing) is no change', () => {
    expect(withFerryEntries(JSON.stringify([...ours, multus], null, 2), ours)).toBeUndefined();
  });

  test('the attachment gone: our entries go; the annotation goes when nothing is left', () => {
    expect(JSON.parse(withFerryEntries(JSON.stringify([...ours, multus]), [])?.value ?? 'null')).toEqual([multus]);
    expect(withFerryEntries(JSON.stringify(ours), [])).toEqual({ value: null });
  });

  test('an annotation that is not a network-status list is replaced, saying why', () => {
    expect(withFerryEntries('{"not":"a list"}', ours)).toEqual({
      value: JSON.stringify(ours),
      unreadable: '(root): expected array',
    });
    expect(withFerryEntries('garbage', [])).toEqual({ value: null, unreadable: expect.stringMatching(/^not JSON/) });
  });
});
