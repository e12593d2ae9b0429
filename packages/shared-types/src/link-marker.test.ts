import { expect, test } from 'vitest';
import { hostVethMarkerOf, MAX_ALIAS_BYTES, markerOf, parseHostVethMarker, parseMarker } from './link-marker';

const ID = 'a'.repeat(64);
const attachment = { generation: 42, network: 'ferry', ifName: 'eth0', containerId: ID, netns: '/var/run/netns/cni-1' };

test('a delegated device marker names the host device and the attachment; anything else is not a marker', () => {
  expect(parseMarker(markerOf('ens1f0v3', 'eth0'))).toEqual({ hostIfName: 'ens1f0v3', attachmentIfName: 'eth0' });
  expect(parseMarker('ferry:host-ifname=ens1f0v3')).toBeUndefined();
  expect(parseMarker('the app was here')).toBeUndefined();
  expect(parseMarker(undefined)).toBeUndefined();
  // A secondary network's device carries its attachment's key and generation, in any order.
  expect(parseMarker(`${markerOf('ens1f0v3', 'net1')} net=sriov ctr=${ID} gen=7`)).toEqual({
    hostIfName: 'ens1f0v3',
    attachmentIfName: 'net1',
    attachment: { generation: 7, network: 'sriov', containerId: ID },
  });
  const key = { generation: 7, network: 'sriov', containerId: ID };
  expect(parseMarker(markerOf('ens1f0v3', 'net1', key))?.attachment).toEqual(key);
  // A key too long for the alias is left out: the device is still known, its attachment not adoptable.
  const long = { ...key, network: 'n'.repeat(200) };
  expect(markerOf('ens1f0v3', 'net1', long)).toBe(markerOf('ens1f0v3', 'net1'));
  // Readers ignore keys they do not know; a partial or invalid key is no key.
  expect(parseMarker(`${markerOf('ens1f0v3', 'net1')} gen=7 net=sriov`)?.attachment).toBeUndefined();
  expect(parseMarker(`${markerOf('ens1f0v3', 'net1')} gen=0 net=sriov ctr=${ID}`)?.attachment).toBeUndefined();
  expect(parseMarker(`${markerOf('ens1f0v3', 'net1')} future=1`)).toEqual({
    hostIfName: 'ens1f0v3',
    attachmentIfName: 'net1',
  });
  expect(parseMarker('ferry:host-ifname=a/b attachment=eth0')).toBeUndefined();
});

test('a host veth marker carries the whole key and the netns, and reads back as written', () => {
  const alias = hostVethMarkerOf(attachment);
  expect(alias).toBe(`ferry:gen=42 net=ferry if=eth0 ctr=${ID} ns=/var/run/netns/cni-1`);
  expect(parseHostVethMarker(alias)).toEqual(attachment);
  // A netns path with a space is the rest of the alias.
  const spaced = { ...attachment, netns: '/run/netns/my pod' };
  expect(parseHostVethMarker(hostVethMarkerOf(spaced))).toEqual(spaced);
});

test('what does not fit 255 bytes is left out: the netns first, then the key; the generation stays', () => {
  const longNetns = { ...attachment, netns: `/run/netns/${'n'.repeat(200)}` };
  const keyed = hostVethMarkerOf(longNetns);
  expect(keyed).toBe(`ferry:gen=42 net=ferry if=eth0 ctr=${ID}`);
  expect(parseHostVethMarker(keyed)).toEqual({ generation: 42, network: 'ferry', ifName: 'eth0', containerId: ID });
  const longKey = { ...attachment, containerId: 'c'.repeat(255) };
  expect(hostVethMarkerOf(longKey)).toBe('ferry:gen=42 if=eth0');
  expect(parseHostVethMarker(hostVethMarkerOf(longKey))).toEqual({ generation: 42, ifName: 'eth0' });
  for (const a of [attachment, longNetns, longKey, { ...attachment, netns: '/x#y' }]) {
    expect(new TextEncoder().encode(hostVethMarkerOf(a)).length).toBeLessThanOrEqual(MAX_ALIAS_BYTES);
  }
  // A netns ip -batch cannot carry (`#` ends a batch line) is left out too.
  expect(hostVethMarkerOf({ ...attachment, netns: '/x#y' })).not.toContain('ns=');
});

test('a host veth marker with any invalid field is not one', () => {
  for (const alias of [
    undefined,
    '',
    'ferry:',
    'ferry:gen=0 if=eth0',
    'ferry:gen=-1 if=eth0',
    'ferry:gen=1.5 if=eth0',
    'ferry:gen=99999999999999999 if=eth0',
    'ferry:gen=1',
    'ferry:gen=1 if=a/b',
    `ferry:gen=1 net=ferry if=eth0`,
    `ferry:gen=1 if=eth0 ctr=${ID}`,
    `ferry:gen=1 net=-bad if=eth0 ctr=${ID}`,
    'ferry:gen=1 if=eth0 ns=relative/path',
    'ferry:gen=1 gen=2 if=eth0',
    'ferry:gen=1  if=eth0',
    'ferry:gen= if=eth0',
    markerOf('eth1', 'eth0'),
    'renamed by the app',
  ]) {
    expect(parseHostVethMarker(alias), String(alias)).toBeUndefined();
  }
});
