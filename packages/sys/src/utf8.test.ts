import { describe, expect, it } from 'vitest';
import { concatBytes, utf8Decode, utf8Encode, utf8Length } from './utf8';

const TEXTS = [
  '',
  'plain ascii {"a":1}',
  'é ü ß',
  'ネットワーク',
  '😀 emoji 𝄞',
  'lone \ud800 high',
  'lone \udc00 low',
  `${'x'.repeat(9000)}é`,
];

describe('utf8', () => {
  it.each(TEXTS)('encodes and measures %#: as Buffer does', (s) => {
    expect(Buffer.from(utf8Encode(s))).toEqual(Buffer.from(s, 'utf8'));
    expect(utf8Length(s)).toBe(Buffer.byteLength(s));
  });

  it.each(TEXTS)('decodes %# back', (s) => {
    expect(utf8Decode(Buffer.from(s))).toBe(Buffer.from(s).toString('utf8'));
  });

  it.each([
    [0xff],
    [0xc0, 0x80],
    [0xe0, 0x80, 0x80],
    [0xed, 0xa0, 0x80],
    [0xf4, 0x90, 0x80, 0x80],
    [0xe2, 0x82],
    [0x61, 0xe2, 0x82, 0x62],
    [0xf0, 0x9f, 0x98],
  ])('decodes bad bytes %# with U+FFFD as TextDecoder does', (...bytes) => {
    const b = Uint8Array.from(bytes);
    expect(utf8Decode(b)).toBe(new TextDecoder().decode(b));
  });

  it('decodes every one- and two-byte input, and every lead byte before each edge continuation, as TextDecoder does', () => {
    const decoder = new TextDecoder();
    const inputs: Uint8Array[] = [];
    for (let a = 0; a < 256; a++) {
      inputs.push(Uint8Array.of(a));
      for (let b = 0; b < 256; b++) inputs.push(Uint8Array.of(a, b));
      // The WHATWG decoder's bounds for the second byte (E0, ED, F0, F4) and the first continuation values.
      for (const b of [0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0]) {
        for (const c of [0x41, 0x80, 0xbf, 0xc0]) inputs.push(Uint8Array.of(a, b, c), Uint8Array.of(a, b, 0x80, c));
      }
    }
    const differing = inputs.filter((b) => utf8Decode(b) !== decoder.decode(b)).map((b) => [...b]);
    expect(differing).toEqual([]);
  });

  it('concatenates', () => {
    expect(concatBytes([Uint8Array.of(1, 2), new Uint8Array(0), Uint8Array.of(3)])).toEqual(Uint8Array.of(1, 2, 3));
  });
});
