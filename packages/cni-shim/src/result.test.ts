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
