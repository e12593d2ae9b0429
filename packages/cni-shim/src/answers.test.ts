import { AllocationSchema } from '@ferry/shared-types/api/allocations';
import { EndpointSchema } from '@ferry/shared-types/api/endpoints';
import { expect, test } from 'vitest';
import type * as z from 'zod/mini';
import { acceptAllocation, acceptEndpoint } from './answers';

const v4 = { family: 4, address: '10.244.0.5/32', gateway: '169.254.1.1' };
const v6 = { family: 6, address: 'fd00:10:244::5/128', gateway: 'fe80::ecee:eeff:feee:eeee' };
const infraPlan = {
  nicType: 'InfraNIC',
  ifName: 'eth0',
  endpointId: 'c1',
  hostVethName: 'fry1a2b3c4d5e6',
  hostVethMac: 'ee:ee:ee:ee:ee:ee',
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
      },
    ],
  },
].map((e) => JSON.parse(JSON.stringify(e)));

/** Values a field might wrongly (or rightly) hold. */
const VALUES: unknown[] = [
  undefined,
  null,
  '',
  'ferry',
  'eth0',
  'x'.repeat(300),
  'bad name!',
  0,
  1,
  -1,
  1.5,
  2 ** 60,
  4,
  6,
  true,
  {},
  [],
  [{}],
  'InfraNIC',
  'DelegatedNIC',
  'BackendNIC',
  'committed',
  'allocated',
  'gone',
  '10.244.0.5',
  '10.244.0.5/32',
  '10.244.0.5/33',
  '10.244.0.5/03',
  '256.1.1.1/32',
  '10.244.0.5/32/1',
  'fd00::5',
  'fd00::5/128',
  'fd00::5/129',
  'FD00::5/128',
  'fd00:::5/128',
  '1:2:3:4:5:6:7:8:9/64',
  '::ffff:10.0.0.1/128',
  '::/0',
  '1:2:3:4:5:6:7::/64',
  '1:2:3:4:5:6:7:8/64',
  '12345::1/64',
  'fe80::1',
  'fe80::g',
  'ee:ee:ee:ee:ee:ee',
  'EE:EE:EE:EE:EE:EE',
  'ee:ee:ee:ee:ee',
  'ee-ee-ee-ee-ee-ee',
  'Ee:ee:ee:ee:ee:ee',
];

/** Every variant of `doc` with one value replaced, one key removed or one unknown key added, at any depth. */
function* variants(doc: unknown): Generator<unknown> {
  if (Array.isArray(doc)) {
    for (const [i, item] of doc.entries()) {
      for (const v of variants(item)) yield doc.map((x, j) => (j === i ? v : x));
      for (const v of VALUES) yield doc.map((x, j) => (j === i ? v : x));
    }
    return;
  }
  if (typeof doc !== 'object' || doc === null) return;
  const o = doc as Record<string, unknown>;
  yield { ...o, unknownKey: 1 };
  for (const key of Object.keys(o)) {
    const { [key]: _, ...without } = o;
    yield without;
    for (const v of VALUES) yield { ...o, [key]: v };
    for (const v of variants(o[key])) yield { ...o, [key]: v };
  }
}

function holdToSchema<T>(
  name: string,
  docs: unknown[],
  accept: (d: unknown) => T | undefined,
  schema: z.ZodMiniType<T>,
) {
  test(`${name}: whatever the hand check accepts, the schema accepts with the same result`, () => {
    let accepted = 0;
    let refused = 0;
    for (const doc of docs) {
      expect(accept(doc), `${name} typical answer`).toEqual(schema.parse(doc));
      for (const v of variants(doc)) {
        const variant = JSON.parse(JSON.stringify(v ?? null));
        const fast = accept(variant);
        if (fast === undefined) {
          refused++;
          continue;
        }
        accepted++;
        const oracle = schema.safeParse(variant);
        expect(oracle.success, JSON.stringify(variant)).toBe(true);
        expect(fast).toEqual(oracle.data);
      }
    }
    expect(accepted).toBeGreaterThan(20);
    expect(refused).toBeGreaterThan(1000);
  });
}

holdToSchema('Allocation', ALLOCATIONS, acceptAllocation, AllocationSchema);
holdToSchema('Endpoint', ENDPOINTS, acceptEndpoint, EndpointSchema);
