import { describe, expect, test } from 'vitest';
import { FERRY_ATTACHMENT_KEY, FerryStatusEntrySchema, isFerryEntry, parseNetworkStatus } from './network-status';

const attachment = { network: 'ferry', containerId: 'c0ffee', ifName: 'eth0' };

describe('k8s.v1.cni.cncf.io/network-status', () => {
  test('Ferry entries: the NPWG keys plus the attachment under a reverse-domain key; device-info for a PCI device', () => {
    const infra = {
      name: 'ferry',
      interface: 'eth0',
      ips: ['10.244.7.9', 'fd00:10:244:7::9'],
      mac: '02:00:00:00:07:09',
      default: true,
      [FERRY_ATTACHMENT_KEY]: attachment,
    };
    const delegated = {
      name: 'ferry',
      interface: 'net1',
      ips: [],
      mac: '02:00:00:00:01:01',
      default: false,
      'device-info': {
        type: 'pci',
        version: '1.1.0',
        pci: { 'pci-address': '0000:18:02.5', 'pf-pci-address': '0000:18:00.0' },
      },
      [FERRY_ATTACHMENT_KEY]: attachment,
    };
    for (const e of [infra, delegated]) expect(FerryStatusEntrySchema.parse(e)).toEqual(e);
    expect(FerryStatusEntrySchema.safeParse({ ...infra, ips: ['10.244.7.9/32'] }).success).toBe(false);
    expect(FerryStatusEntrySchema.safeParse({ ...infra, [FERRY_ATTACHMENT_KEY]: undefined }).success).toBe(false);
    expect(
      FerryStatusEntrySchema.safeParse({ ...delegated, 'device-info': { type: 'vdpa', version: '1.1.0' } }).success,
    ).toBe(false);
  });

  test("anyone's list reads back with every key of every entry kept, and only Ferry's entries are Ferry's", () => {
    const multus = {
      name: 'kube-system/macvlan-conf',
      interface: 'net2',
      ips: ['192.168.1.205'],
      mac: '86:1d:96:ff:55:0d',
      dns: {},
      'device-info': {
        type: 'pci',
        version: '1.0.0',
        pci: { 'pci-address': '0000:18:02.5', 'pf-pci-address': '0000:18:00.0' },
      },
      'org.example.extra': { anything: [1, 2] },
    };
    const ferry = {
      name: 'ferry',
      interface: 'eth0',
      ips: ['10.244.1.5'],
      default: true,
      [FERRY_ATTACHMENT_KEY]: attachment,
    };
    const r = parseNetworkStatus(JSON.stringify([multus, ferry]));
    expect(r).toEqual({ entries: [multus, ferry] });
    if (!('entries' in r)) throw new Error('unreadable');
    expect(r.entries.map(isFerryEntry)).toEqual([false, true]);
  });

  test.for([
    ['not JSON', '[{', /^not JSON: /],
    ['not a list', '{"name":"x"}', /^\(root\): expected array$/],
    ['an entry without a name', '[{"interface":"eth0"}]', /^\[0\]\.name: expected string$/],
  ] as const)('%s: unreadable, saying why', ([, text, problem]) => {
    expect(parseNetworkStatus(text)).toEqual({ problem: expect.stringMatching(problem) });
  });
});
