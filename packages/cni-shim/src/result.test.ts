import type { Allocation } from '@ferry/shared-types/api/allocations';
import { AnyResultSchema } from '@ferry/shared-types/cni/any-result';
import { resultSchemaFor } from '@ferry/shared-types/cni/result';
import { holdToSchema } from '@ferry/shared-types/testing/oracle';
import { expect, test } from 'vitest';
import type { ShimConf } from './config';
import { isAnyResult, prevResultOf, toResult } from './result';

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

holdToSchema(
  'prevResult',
  [
    {
      cniVersion: '1.0.0',
      interfaces: [
        { name: 'fry0', mac: 'ee:ee:ee:ee:ee:ee' },
        { name: 'eth0', sandbox: '/var/run/netns/p' },
      ],
      ips: [{ address: '10.244.1.5/32', gateway: '169.254.1.1', interface: 1 }],
      routes: [{ dst: '0.0.0.0/0', gw: '169.254.1.1' }],
      dns: { nameservers: ['10.96.0.10'] },
    },
    { cniVersion: '0.3.1', ips: [{ version: '4', address: '10.0.0.2/24' }], portMappings: [] },
  ],
  (doc) => (isAnyResult(doc) ? doc : undefined),
  AnyResultSchema,
);
