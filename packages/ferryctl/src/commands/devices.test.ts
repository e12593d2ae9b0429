import { expect, test } from 'vitest';
import { addDevice, attach, ctl, ctlJson, expectListing, printed, useFerryd } from '../testing/ferryd';

test('devices: the inventory with each device state, holder and reservation', async (t) => {
  const h = await useFerryd(t);
  addDevice(h, '02:00:00:00:00:01', 'frontend', 'ens1f0');
  addDevice(h, '02:00:00:00:00:02', 'frontend', 'ens1f1');
  await attach(h, 'c1', { delegatedNICs: { group: 'frontend', count: 1 } });
  await expectListing(
    h,
    { args: ['devices'], alias: ['devices', 'list'], url: '/v1/operator/devices' },
    `
MAC                PCI-ADDRESS  GROUP     HOST-NAME  STATE     HELD-BY  RESERVED-FOR
02:00:00:00:00:01  -            frontend  ens1f0     assigned  c1/net1  -
02:00:00:00:00:02  -            frontend  ens1f1     free      -        -
`,
  );
});

test('devices reserve and unreserve: the device is held back for the pod, then free again', async (t) => {
  const h = await useFerryd(t);
  addDevice(h, '02:00:00:00:00:02', 'frontend', 'ens1f1');
  const reserved = await ctl(h, 'devices', 'reserve', '02:00:00:00:00:02', '--namespace', 'shop', '--pod', 'db-0');
  expect(reserved).toEqual(printed('02:00:00:00:00:02 reserved for shop/db-0'));
  expect((await ctl(h, 'devices')).out.split('\n')[1]).toBe(
    '02:00:00:00:00:02  -            frontend  ens1f1     free   -        shop/db-0',
  );
  // The MAC in any case; --ifname is the name the device gets in the pod.
  const again = await ctlJson(
    h,
    'devices',
    'reserve',
    '02:00:00:00:00:02'.toUpperCase(),
    '--namespace',
    'shop',
    '--pod',
    'db-1',
    '--ifname',
    'stor0',
  );
  expect(again).toMatchObject({
    mac: '02:00:00:00:00:02',
    reservation: { namespace: 'shop', pod: 'db-1', ifName: 'stor0' },
  });
  expect(await ctl(h, 'devices', 'unreserve', '02:00:00:00:00:02')).toEqual(printed('02:00:00:00:00:02 not reserved'));
  expect(await ctlJson(h, 'devices', 'unreserve', '02:00:00:00:00:02')).not.toHaveProperty('reservation');
});

test('devices: an unknown device is 1; a missing MAC, namespace or pod, or an unknown subcommand, is usage', async (t) => {
  const h = await useFerryd(t);
  expect(await ctl(h, 'devices', 'unreserve', '02:00:00:00:00:09')).toEqual({
    code: 1,
    out: '',
    err: 'ferryctl: device 02:00:00:00:00:09 is not in the inventory\n',
  });
  const usage = async (args: string[], problem: string) => {
    const r = await ctl(h, 'devices', ...args);
    expect(r.code, args.join(' ')).toBe(2);
    expect(r.err, args.join(' ')).toMatch(new RegExp(`^ferryctl: ${problem}\n\nusage: `));
  };
  await usage(['reserve'], 'devices reserve needs a device, by its PCI address or MAC');
  await usage(['unreserve'], 'devices unreserve needs a device, by its PCI address or MAC');
  await usage(['reserve', '02:00:00:00:00:01', '--pod', 'db-0'], 'devices reserve needs --namespace and --pod');
  await usage(['reserve', '02:00:00:00:00:01', '--namespace', 'shop'], 'devices reserve needs --namespace and --pod');
  await usage(['steal'], 'unknown devices subcommand "steal"');
});
