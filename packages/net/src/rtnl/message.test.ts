import { expect, test } from 'vitest';
import { decodeMessages, encodeAttrs, encodeMessage, errnoOf, ipBytes, ipText, parseCidr } from './message';

test('addresses become network-order bytes, "::" expanded wherever it stands', () => {
  expect([...ipBytes('10.244.0.5').bytes]).toEqual([10, 244, 0, 5]);
  expect(ipBytes('fe80::ecee:eeff:feee:eeee').bytes.toString('hex')).toBe('fe80000000000000eceeeefffeeeeeee');
  expect(ipBytes('::').bytes.toString('hex')).toBe('0'.repeat(32));
  expect(ipBytes('fd00:10:244::5').bytes.toString('hex')).toBe('fd000010024400000000000000000005');
  expect(parseCidr('0.0.0.0/0')).toMatchObject({ family: 2, prefixlen: 0 });
  expect(parseCidr('fd00::5')).toMatchObject({ family: 10, prefixlen: 128 });
});

test('attributes are padded to 4 bytes and nest; a message carries its own length', () => {
  const attrs = encodeAttrs([
    [3, Buffer.from('eth0\0')],
    [18, [[1, Buffer.from('veth\0')]]],
  ]);
  // IFLA_IFNAME: 4 + 5 bytes, padded to 12; IFLA_LINKINFO: 4 + (4 + 5 → 12) = 16.
  expect(attrs.length).toBe(28);
  expect(attrs.readUInt16LE(0)).toBe(9);
  expect(attrs.readUInt16LE(12)).toBe(16);
  const msg = encodeMessage(16, 5, 7, Buffer.alloc(16), []);
  expect([msg.readUInt32LE(0), msg.readUInt16LE(4), msg.readUInt16LE(6), msg.readUInt32LE(8)]).toEqual([32, 16, 5, 7]);
});

test('an NLMSG_ERROR answer gives its errno, 0 for an ACK', () => {
  const err = (errno: number, seq: number) => {
    const payload = Buffer.alloc(20);
    payload.writeInt32LE(-errno, 0);
    return encodeMessage(2, 0, seq, payload, []);
  };
  const replies = decodeMessages(Buffer.concat([err(17, 1), err(0, 2)]));
  expect(replies.map((r) => [r.seq, errnoOf(r)])).toEqual([
    [1, 17],
    [2, 0],
  ]);
});

test('address bytes print as iproute2 prints them (RFC 5952 for IPv6)', () => {
  for (const ip of [
    '10.244.0.5',
    '::',
    '::1',
    'fe80::ecee:eeff:feee:eeee',
    'fd00:10:244::5',
    '2001:db8:0:1:1:1:1:1',
    '2001:0:0:1::1',
  ]) {
    expect(ipText(ipBytes(ip).bytes)).toBe(ip);
  }
  expect(ipText(ipBytes('2001:db8:0:0:1:0:0:1').bytes)).toBe('2001:db8::1:0:0:1');
});
