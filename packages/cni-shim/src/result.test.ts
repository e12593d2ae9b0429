import type { Allocation } from '@ferry/shared-types/api/allocations';
import { resultSchemaFor } from '@ferry/shared-types/cni/result';
import { Code } from '@ferry/shared-types/errors';
import { expect, test } from 'vitest';
import type { ShimConf } from './config';
import { prevResultOf, toResult } from './result';

const alloc: Allocation = {
  network: 'ferry',
  containerId: 'c1',
  ifName: 'eth0',
  generation: 1,
  nics: [
    {
      nicType: 'InfraNIC',
      ifName: 'eth0',
      endpointId: 'c1',
      hostVethName: 'fry0123456789ab',
      hostVethMac: 'ee:ee:ee:ee:ee:ee',
      hostVethAlias: 'ferry:gen=1 net=ferry if=eth0 ctr=c1 ns=/var/run/netns/p',
      addresses: [{ family: 4, address: '10.244.1.5/32', gateway: '169.254.1.1' }],
      routes: [{ dst: '0.0.0.0/0', gw: '169.254.1.1' }],
    },
  ],
};
const [plan] = alloc.nics;
const built = {
  ifName: 'eth0',
  mac: '0a:58:0a:f4:01:05',
  containerIfIndex: 3,
};

test("a chained prevResult is passed through with Ferry's interfaces, addresses and routes appended", async () => {
  const conf = {
    cniVersion: '0.4.0',
    name: 'ferry',
    type: 'ferry-cni',
    prevResult: {
      cniVersion: '0.4.0',
      interfaces: [{ name: 'lo', sandbox: '/var/run/netns/p' }],
      ips: [{ version: '4', address: '127.0.0.1/8', interface: 0 }],
      dns: { nameservers: ['10.96.0.10'] },
    },
  } as ShimConf;
  if (plan?.nicType !== 'InfraNIC') throw new Error('plan');
  const r = toResult(conf, await prevResultOf(conf), '/var/run/netns/p', alloc, [{ plan, built }]);
  expect(r).toEqual({
    cniVersion: '0.4.0',
    interfaces: [
      { name: 'lo', sandbox: '/var/run/netns/p' },
      { name: 'fry0123456789ab', mac: 'ee:ee:ee:ee:ee:ee' },
      { name: 'eth0', mac: '0a:58:0a:f4:01:05', sandbox: '/var/run/netns/p' },
    ],
    ips: [
      { version: '4', address: '127.0.0.1/8', interface: 0 },
      { version: '4', address: '10.244.1.5/32', gateway: '169.254.1.1', interface: 2 },
    ],
    routes: [{ dst: '0.0.0.0/0', gw: '169.254.1.1' }],
    dns: { nameservers: ['10.96.0.10'] },
  });
  expect(resultSchemaFor('0.4.0').safeParse(r).success).toBe(true);
});

test('a prevResult the check refuses is worded by the schema, with code 7', async () => {
  const conf = { cniVersion: '1.0.0', name: 'ferry', type: 'ferry-cni', prevResult: { ips: [{ version: '4' }] } };
  await expect(prevResultOf(conf as ShimConf)).rejects.toMatchObject({
    code: Code.InvalidConfig,
    message: 'invalid network config: prevResult: ips[0].address: expected string',
  });
});

test("a secondary network's result is its device alone, in the sandbox, with its addresses; pciID from 1.0.0 on", () => {
  const device = {
    nicType: 'DelegatedNIC' as const,
    ifName: 'net1',
    endpointId: 'm1-net1',
    mac: '02:00:00:00:0f:01',
    hostIfName: 'ens2f0v1',
    pciAddress: '0000:18:02.1',
    addresses: [{ family: 4 as const, address: '192.168.50.2/24', gateway: '192.168.50.1' }],
    routes: [{ dst: '192.168.0.0/16', gw: '192.168.50.1' }],
  };
  const secondary: Allocation = { network: 'sriov', containerId: 'm1', ifName: 'net1', generation: 2, nics: [device] };
  const nics = [{ plan: device, built: { ifName: 'net1', mac: device.mac, containerIfIndex: 9 } }];
  for (const cniVersion of ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'] as const) {
    const conf = { cniVersion, name: 'sriov', type: 'ferry-cni' } as ShimConf;
    const r = toResult(conf, {}, '/var/run/netns/p', secondary, nics);
    const v1 = cniVersion.startsWith('1.');
    expect(r.interfaces, cniVersion).toEqual([
      {
        name: 'net1',
        mac: device.mac,
        sandbox: '/var/run/netns/p',
        ...(v1 ? { pciID: '0000:18:02.1' } : {}),
      },
    ]);
    expect(r.ips, cniVersion).toEqual([
      { ...(v1 ? {} : { version: '4' }), address: '192.168.50.2/24', gateway: '192.168.50.1', interface: 0 },
    ]);
    expect(resultSchemaFor(cniVersion).safeParse(r).success, cniVersion).toBe(true);
  }
});

test('a userspace device is listed by name with its PCI address, no MAC and no address (as sriov-cni lists a DPDK VF)', async () => {
  const conf = { cniVersion: '1.0.0', name: 'ferry', type: 'ferry-cni' } as ShimConf;
  if (plan?.nicType !== 'InfraNIC') throw new Error('plan');
  const userspace = {
    nicType: 'DelegatedNIC' as const,
    ifName: 'dpdk0',
    endpointId: 'c1-dpdk0',
    userspace: true as const,
    pciAddress: '0000:3b:02.1',
    addresses: [],
    routes: [],
  };
  const withIt = { ...alloc, nics: [plan, userspace] };
  const r = toResult(conf, await prevResultOf(conf), '/var/run/netns/p', withIt, [
    { plan, built },
    { plan: userspace, built: { ifName: 'dpdk0', userspace: true } },
  ]);
  expect(r.interfaces).toEqual([
    { name: 'fry0123456789ab', mac: 'ee:ee:ee:ee:ee:ee' },
    { name: 'eth0', mac: '0a:58:0a:f4:01:05', sandbox: '/var/run/netns/p' },
    { name: 'dpdk0', sandbox: '/var/run/netns/p', pciID: '0000:3b:02.1' },
  ]);
  expect(r.ips).toEqual([{ address: '10.244.1.5/32', gateway: '169.254.1.1', interface: 1 }]);
  expect(resultSchemaFor('1.0.0').safeParse(r).success).toBe(true);
});
