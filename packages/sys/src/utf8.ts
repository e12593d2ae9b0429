/**
 * UTF-8 on plain Uint8Arrays, without Buffer or TextEncoder/TextDecoder: in the Bun-built shim each of
 * those pages in Bun's own code for it, 0.6–1.3 MiB of resident memory per exec (bench/README.md), for
 * texts of a few KiB. Decoding follows the WHATWG decoder (a bad sequence becomes U+FFFD), as
 * Buffer#toString and TextDecoder do; encoding writes a lone surrogate as U+FFFD, as they do.
 */

const REPLACEMENT = 0xfffd;

/** The UTF-8 bytes of `s`. */
export function utf8Encode(s: string): Uint8Array {
  const out = new Uint8Array(utf8Length(s));
  let o = 0;
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) {
      out[o++] = c;
      continue;
    }
    if (c < 0x800) {
      out[o++] = 0xc0 | (c >> 6);
      out[o++] = 0x80 | (c & 0x3f);
      continue;
    }
    if (c >= 0xd800 && c <= 0xdfff) {
      const next = s.charCodeAt(i + 1);
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
        i++;
        out[o++] = 0xf0 | (c >> 18);
        out[o++] = 0x80 | ((c >> 12) & 0x3f);
        out[o++] = 0x80 | ((c >> 6) & 0x3f);
        out[o++] = 0x80 | (c & 0x3f);
        continue;
      }
      c = REPLACEMENT;
    }
    out[o++] = 0xe0 | (c >> 12);
    out[o++] = 0x80 | ((c >> 6) & 0x3f);
    out[o++] = 0x80 | (c & 0x3f);
  }
  return out;
}

/** The length of `s` in UTF-8 bytes (Buffer.byteLength). */
export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && isLowSurrogate(s.charCodeAt(i + 1))) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

const isLowSurrogate = (c: number) => c >= 0xdc00 && c <= 0xdfff;

/** `b` decoded as UTF-8. */
export function utf8Decode(b: Uint8Array): string {
  const units: number[] = [];
  let text = '';
  const emit = (cp: number) => {
    if (cp > 0xffff) units.push(0xd800 + ((cp - 0x10000) >> 10), 0xdc00 + ((cp - 0x10000) & 0x3ff));
    else units.push(cp);
    // fromCharCode takes its units as arguments: flushed in slices well under any argument limit.
    if (units.length >= 4096) text += String.fromCharCode(...units.splice(0));
  };
  let need = 0;
  let seen = 0;
  let cp = 0;
  let lower = 0x80;
  let upper = 0xbf;
  for (let i = 0; i < b.length; i++) {
    const byte = b[i] as number;
    if (need === 0) {
      if (byte < 0x80) emit(byte);
      else if (byte >= 0xc2 && byte <= 0xdf) {
        need = 1;
        cp = byte & 0x1f;
      } else if (byte >= 0xe0 && byte <= 0xef) {
        if (byte === 0xe0) lower = 0xa0;
        if (byte === 0xed) upper = 0x9f;
        need = 2;
        cp = byte & 0xf;
      } else if (byte >= 0xf0 && byte <= 0xf4) {
        if (byte === 0xf0) lower = 0x90;
        if (byte === 0xf4) upper = 0x8f;
        need = 3;
        cp = byte & 0x7;
      } else emit(REPLACEMENT);
      continue;
    }
    if (byte < lower || byte > upper) {
      // The sequence ends early: U+FFFD for it, and this byte starts afresh.
      need = seen = cp = 0;
      lower = 0x80;
      upper = 0xbf;
      emit(REPLACEMENT);
      i--;
      continue;
    }
    lower = 0x80;
    upper = 0xbf;
    cp = (cp << 6) | (byte & 0x3f);
    if (++seen === need) {
      emit(cp);
      need = seen = cp = 0;
    }
  }
  if (need !== 0) emit(REPLACEMENT);
  return text + String.fromCharCode(...units);
}

/** The parts one after the other (Buffer.concat). */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}
