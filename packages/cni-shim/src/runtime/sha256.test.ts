import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sha256Hex } from './sha256';

describe('sha256Hex', () => {
  it('is the FIPS 180-4 example digest of "abc"', () => {
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  // 55/56 and 119/120 bytes are where the length no longer fits the last block, 63/64 where the 1 bit
  // starts the next one; the multi-byte texts cross those bounds by their UTF-8 length, not their .length.
  it.each([
    '',
    'ferry/c1/eth0',
    'é/ネ/😀',
    ...[55, 56, 63, 64, 119, 120].map((n) => 'a'.repeat(n)),
    `${'a'.repeat(53)}é`,
    `${'a'.repeat(53)}ネ`,
    `${'a'.repeat(52)}😀`,
    `${'a'.repeat(116)}😀`,
    'b'.repeat(1000),
  ])('matches node:crypto for %#', (text) => {
    expect(sha256Hex(text)).toBe(createHash('sha256').update(text).digest('hex'));
  });
});
