import { holdToSchema } from '@ferry/shared-types/testing/oracle';
import { expect, test } from 'vitest';
import * as z from 'zod';
import { FamilyAddressRowSchema } from './pools';
import { rowCheckOf } from './row-check';
import { AttachmentRowSchema, DeviceRowSchema, InterfaceRowSchema, PoolRowSchema, parseRow } from './rows';

/** The hand check as parseRow uses it: the row itself when it passes, else undefined (zod decides). */
function acceptWith<T>(schema: z.core.$ZodType<T>) {
  const check = rowCheckOf(schema);
  if (!check) throw new Error('no hand check');
  return (row: unknown) => (check(row) ? (row as T) : undefined);
}

const attachment = {
  id: 7,
  network: 'ferry',
  container_id: 'c1',
  if_name: 'eth0',
  netns: '/var/run/netns/p1',
  pod_namespace: 'default',
  pod_name: 'web',
  pod_uid: null,
  pod_infra_container_id: null,
  state: 'committed',
  created_at_ms: 1_796_000_000_000,
  updated_at_ms: 1_796_000_000_500,
  adopted_at_ms: null,
};
const iface = {
  id: 9,
  attachment_id: 7,
  position: 0,
  container_id: 'c1',
  if_name: 'eth0',
  endpoint_id: 'c1-eth0',
  nic_type: 'InfraNIC',
  routes_json: '[]',
  mac: '0a:58:0a:f4:00:05',
  container_if_index: 2,
  host_veth_name: 'fry1a2b3c4d5e6',
  host_if_name: null,
  device_mac: null,
  static_addresses_json: null,
};
const address = {
  pool_id: 1,
  offset_hex: '00000005',
  address: '10.244.0.5',
  state: 'Assigned',
  interface_id: 9,
  since_ms: 1_796_000_000_000,
  available_at_ms: null,
  family: 4,
};
const device = {
  mac: '02:00:00:00:00:01',
  grp: 'frontend',
  host_if_name: 'ens5',
  present: 1,
  interface_id: null,
  reserved_namespace: 'default',
  reserved_pod: 'web',
  reserved_if_name: null,
  reserved_json: '{}',
  seen_at_ms: 1_796_000_000_000,
};
const pool = { id: 1, network: 'ferry', family: 6, subnet: 'fd00::/64', cursor_hex: null };

holdToSchema(
  'attachment row',
  [attachment, { ...attachment, state: 'allocated' }, { ...attachment, adopted_at_ms: 1_796_000_000_900 }],
  acceptWith(AttachmentRowSchema),
  AttachmentRowSchema,
);
holdToSchema('interface row', [iface], acceptWith(InterfaceRowSchema), InterfaceRowSchema);
holdToSchema('address row', [address], acceptWith(FamilyAddressRowSchema), FamilyAddressRowSchema);
holdToSchema('device row', [device], acceptWith(DeviceRowSchema), DeviceRowSchema);
holdToSchema(
  'pool row',
  [pool, { ...pool, family: 4, cursor_hex: '000000ff' }],
  acceptWith(PoolRowSchema),
  PoolRowSchema,
);

test('a schema with anything a row schema does not use gets no hand check: zod parses', () => {
  expect(rowCheckOf(z.object({ a: z.string().check(z.maxLength(3)) }))).toBeUndefined();
  expect(rowCheckOf(z.object({ a: z.number().check(z.positive()) }))).toBeUndefined();
  expect(rowCheckOf(z.object({ a: z.array(z.string()) }))).toBeUndefined();
  expect(rowCheckOf(z.looseObject({ a: z.string() }))).toBeUndefined();
  expect(rowCheckOf(z.nullable(z.string()))?.(null)).toBe(true);
});

test('a row that does not fit is still reported by zod, naming the table and the column', () => {
  expect(() => parseRow(AttachmentRowSchema, { ...attachment, state: 'gone' }, 'attachments')).toThrow(
    /corrupt attachments row .*state/,
  );
  // A column the schema does not know is dropped by zod, as before.
  expect(parseRow(PoolRowSchema, { ...pool, extra: 1 }, 'pools')).toEqual(pool);
});
