/**
 * The network config on stdin: decoded (code 6), version-checked (code 1, in skel's words), then
 * validated (code 7 naming the field). Ferry allocates through ferryd, so a delegated `ipam` is refused
 * rather than silently ignored.
 */
import { type NetConf, NetConfSchema } from '@ferry/shared-types/cni/config';
import {
  type CniVersion,
  IMPLICIT_VERSION,
  isSupportedVersion,
  SUPPORTED_VERSIONS,
  specHas,
} from '@ferry/shared-types/cni/versions';
import { CniError, Code } from '@ferry/shared-types/errors';
import { parseAs } from '@ferry/shared-types/parse';
import type { Command } from './env';

/** Larger than any real conflist entry by far; refusing it bounds memory and parse time. */
export const MAX_STDIN_BYTES = 1024 * 1024;

export type ShimConf = NetConf & { cniVersion: CniVersion };

/** Go's %q of a string slice, as skel prints the supported versions. */
const SUPPORTED_Q = `[${SUPPORTED_VERSIONS.map((v) => `"${v}"`).join(' ')}]`;

export function decodeStdin(stdin: string): Record<string, unknown> {
  if (Buffer.byteLength(stdin) > MAX_STDIN_BYTES) {
    throw new CniError(Code.DecodeFailure, `decode network config: stdin is larger than ${MAX_STDIN_BYTES} bytes`);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(stdin);
  } catch (err) {
    throw new CniError(Code.DecodeFailure, `decode network config: ${(err as Error).message}`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw new CniError(Code.DecodeFailure, 'decode network config: expected a JSON object');
  }
  return { ...doc };
}

/** The cniVersion the config declares, or 0.1.0 when it declares none (libcni's DecodeVersion). */
export function declaredVersion(doc: Record<string, unknown>): string {
  const v = doc.cniVersion;
  return typeof v === 'string' && v !== '' ? v : IMPLICIT_VERSION;
}

export function parseNetConf(stdin: string, command: Command): ShimConf {
  const doc = decodeStdin(stdin);
  const version = declaredVersion(doc);
  if (!isSupportedVersion(version)) {
    throw new CniError(
      Code.IncompatibleVersion,
      'incompatible CNI versions',
      `config is "${version}", plugin supports ${SUPPORTED_Q}`,
    );
  }
  requireVersionFor(command, version);
  const conf = parseAs(NetConfSchema, { ...doc, cniVersion: version }, Code.InvalidConfig, 'invalid network config');
  if (conf.ipam?.type) {
    throw new CniError(
      Code.UnsupportedField,
      `unsupported field ipam.type "${conf.ipam.type}": ferry-cni allocates addresses through ferryd`,
    );
  }
  return { ...conf, cniVersion: version };
}

function requireVersionFor(command: Command, version: CniVersion): void {
  const needs =
    command === 'CHECK' && !specHas.check(version)
      ? '0.4.0'
      : (command === 'GC' || command === 'STATUS') && !specHas.status(version)
        ? '1.1.0'
        : undefined;
  if (needs) {
    throw new CniError(
      Code.IncompatibleVersion,
      `config version does not allow ${command}`,
      `config is "${version}", ${command} needs ${needs} or later`,
    );
  }
}
