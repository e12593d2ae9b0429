import { AllocationSchema } from '@ferry/shared-types/api/allocations';
import { EndpointSchema, ReleaseResultSchema } from '@ferry/shared-types/api/endpoints';
import { holdToSchema } from '@ferry/shared-types/testing/oracle';
import { acceptAllocation, acceptEndpoint, acceptReleaseResult } from './answers';

const v4 = { family: 4, address: '10.244.0.5/32', gateway: '169.254.1.1' };
const v6 = { family: 6, address: 'fd00:10:244::5/128', gateway: 'fe80::ecee:eeff:feee:eeee' };
const infraPlan = {
  nicType: 'InfraNIC',
  ifName: 'eth0',
  endpointId: 'c1',
  hostVethName: 'fry1a2b3c4d5e6',
  hostVethMac: 'ee:ee:ee:ee:ee:ee',
  hostVethAlias: 'ferry:gen=1 net=ferry if=eth0 ctr=c1 ns=/var/run/netns/p',
  addresses: [v4, v6],
  routes: [
    { dst: '0.0.0.0/0', gw: '169.254.1.1' },
    { dst: '::/0', gw: 'fe80::ecee:eeff:feee:eeee' },
  ],
  mtu: 1450,
};
const delegatedPlan = {
  nicType: 'DelegatedNIC',
  ifName: 'net1',
  endpointId: 'c1-net1',
  mac: '02:00:00:00:00:01',
  hostIfName: 'ens5',
  addresses: [{ family: 4, address: '10.245.0.7/24' }],
  routes: [{ dst: '10.245.0.0/16' }],
};
const ALLOCATIONS = [
  {
    network: 'ferry',
    containerId: 'c1',
    ifName: 'eth0',
    generation: 1,
    nics: [{ ...infraPlan, addresses: [v4], routes: [infraPlan.routes[0]] }],
  },
  {
    network: 'ferry',
    containerId: 'c1',
    ifName: 'eth0',
    generation: 3,
    nics: [infraPlan, delegatedPlan],
    dns: { nameservers: ['10.96.0.10'], search: ['svc'] },
  },
];
const record = {
  containerId: 'c1',
  ifName: 'eth0',
  endpointId: 'c1',
  nicType: 'InfraNIC',
  network: 'ferry',
  attachmentIfName: 'eth0',
  netns: '/var/run/netns/p1',
  pod: { namespace: 'default', name: 'web', uid: 'u1' },
  state: 'committed',
  generation: 1,
  addresses: [v4, v6],
  routes: infraPlan.routes,
  mac: '02:42:0a:f4:00:05',
  containerIfIndex: 2,
  hostVethName: 'fry1a2b3c4d5e6',
  createdAt: '2026-11-30T23:00:00.000Z',
  updatedAt: '2026-11-30T23:00:00.000Z',
};
const ENDPOINTS = [
  { containerId: 'c1', interfaces: [record] },
  {
    containerId: 'c1',
    interfaces: [
      { ...record, state: 'allocated', pod: {}, mac: undefined, containerIfIndex: undefined },
      {
        ...record,
        ifName: 'net1',
        endpointId: 'c1-net1',
        nicType: 'DelegatedNIC',
        hostVethName: undefined,
        hostIfName: 'ens5',
        deviceMac: '02:00:00:00:00:01',
        addresses: delegatedPlan.addresses,
        routes: delegatedPlan.routes,
        adoptedAt: '2026-12-01T08:00:00.000Z',
      },
    ],
  },
].map((e) => JSON.parse(JSON.stringify(e)));

holdToSchema('Allocation', ALLOCATIONS, acceptAllocation, AllocationSchema);
holdToSchema('Endpoint', ENDPOINTS, acceptEndpoint, EndpointSchema);
holdToSchema(
  'ReleaseResult',
  [{ released: [] }, { released: ENDPOINTS[0].interfaces }, { released: [], toTearDown: ENDPOINTS[1].interfaces }],
  acceptReleaseResult,
  ReleaseResultSchema,
);
