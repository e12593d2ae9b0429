/**
 * Address arithmetic on BigInt, so an IPv6 /64 is as cheap as an IPv4 /24. Strings are validated by
 * zod's strict cidr/ip formats at the config boundary; ipaddr.js turns them into bytes and back into
 * canonical text (RFC 5952 for IPv6).
 */
import type { Family } from '@ferry/shared-types/api/common';
import ipaddr from 'ipaddr.js';

export type { Family } from '@ferry/shared-types/api/common';

/** 32 or 128: the bits of an address of the family. */
export const bitsOf = (family: Family): number => (family === 4 ? 32 : 128);

export interface Cidr {
  family: Family;
  /** The network address. */
  base: bigint;
  prefix: number;
  /** 32 or 128. */
  bits: number;
}

export function familyOf(address: string): Family {
  return address.includes(':') ? 6 : 4;
}

/** An address in the form the kernel prints it (RFC 5952 for IPv6), so text compares with `ip -j` output. */
export function canonicalAddress(address: string): string {
  return ipaddr.parse(address).toString();
}

export function toBigInt(address: string): bigint {
  let n = 0n;
  for (const byte of ipaddr.parse(address).toByteArray()) n = (n << 8n) | BigInt(byte);
  return n;
}

export function fromBigInt(n: bigint, family: Family): string {
  const len = family === 4 ? 4 : 16;
  const bytes: number[] = new Array(len);
  for (let i = len - 1; i >= 0; i--) {
    bytes[i] = Number(n & 0xffn);
    n >>= 8n;
  }
  return ipaddr.fromByteArray(bytes).toString();
}

/** Parses `a.b.c.d/p` or `x::/p`. Host bits must be zero: `10.0.0.1/24` is refused as ambiguous. */
export function parseCidr(text: string): Cidr {
  const slash = text.lastIndexOf('/');
  if (slash < 0) throw new Error(`"${text}" is not a CIDR`);
  const addr = text.slice(0, slash);
  const prefix = Number(text.slice(slash + 1));
  const family = familyOf(addr);
  const bits = bitsOf(family);
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > bits) throw new Error(`"${text}" has an invalid prefix`);
  const base = toBigInt(addr);
  if ((base & hostMask(bits, prefix)) !== 0n) throw new Error(`"${text}" has host bits set`);
  return { family, base, prefix, bits };
}

/** An `exclude` entry: a CIDR, or a single address as its /32 or /128. */
export function parseExclusion(entry: string): Cidr {
  return parseCidr(entry.includes('/') ? entry : `${entry}/${bitsOf(familyOf(entry))}`);
}

function hostMask(bits: number, prefix: number): bigint {
  return (1n << BigInt(bits - prefix)) - 1n;
}

/** The last address of the CIDR (the broadcast address for IPv4). */
export function lastOf(c: Cidr): bigint {
  return c.base | hostMask(c.bits, c.prefix);
}

export function contains(c: Cidr, n: bigint): boolean {
  return n >= c.base && n <= lastOf(c);
}

/** True when the two CIDRs share an address (same family only). */
export function overlaps(a: Cidr, b: Cidr): boolean {
  return a.family === b.family && a.base <= lastOf(b) && b.base <= lastOf(a);
}

export function formatCidr(c: Cidr): string {
  return `${fromBigInt(c.base, c.family)}/${c.prefix}`;
}
