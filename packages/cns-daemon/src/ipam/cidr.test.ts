import { expect, test } from 'vitest';
import { contains, fromBigInt, lastOf, parseCidr, toBigInt } from './cidr';

test('IPv4 round trip and range', () => {
  const c = parseCidr('10.244.0.0/16');
  expect(c.family).toBe(4);
  expect(fromBigInt(c.base, 4)).toBe('10.244.0.0');
  expect(fromBigInt(lastOf(c), 4)).toBe('10.244.255.255');
  expect(contains(c, toBigInt('10.244.7.9'))).toBe(true);
  expect(contains(c, toBigInt('10.245.0.0'))).toBe(false);
});

test('IPv6 /64 stays exact beyond 2^53', () => {
  const c = parseCidr('fd00:10:244:1::/64');
  expect(fromBigInt(lastOf(c), 6)).toBe('fd00:10:244:1:ffff:ffff:ffff:ffff');
  expect(fromBigInt(c.base + 5n, 6)).toBe('fd00:10:244:1::5');
  expect(lastOf(c) - c.base + 1n).toBe(2n ** 64n);
});

test.for(['10.0.0.1/24', '10.0.0.0/33', '10.0.0.0', 'fd00::1/64'])('refuses %s', (text) => {
  expect(() => parseCidr(text)).toThrow();
});
