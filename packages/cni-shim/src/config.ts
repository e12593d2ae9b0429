/**
 * The network config on stdin: decoded (code 6), version-checked (code 1, in skel's words), then
 * validated (code 7 naming the field). Ferry allocates through ferryd, so a delegated `ipam` is refused
 * on the commands that set up or inspect (never on DEL or GC) rather than silently ignored.
 *
 * Building NetConfSchema costs ~2 ms of every command (zod constructs run cold once per process), so the
 * common config — Ferry's scalar keys only — is checked by hand (acceptPlainNetConf); anything else, valid
 * or not, goes through the schema, which also words every error. config.test.ts holds the hand check to
 * the schema: whatever it accepts, the schema accepts with the same result.
 */
import type { NetConf } from '@ferry/shared-types/cni/config';
import { networkNameProblem } from '@ferry/shared-types/cni/validate';
import { type CniVersion, isSupportedVersion, SUPPORTED_VERSIONS, specHas } from '@ferry/shared-types/cni/versions';
import { SHIM_LOG_MAX_BACKUPS_LIMIT, SHIM_LOG_MAX_SIZE_KIB_LIMIT } from '@ferry/shared-types/config/defaults';
import { CniError, Code } from '@ferry/shared-types/errors';
import { parseAs } from '@ferry/shared-types/parse';
import type { Command } from './env';
import { declaredVersion } from './stdin';

export type ShimConf = NetConf & { cniVersion: CniVersion };

/** Go's %q of a string slice, as skel prints the supported versions (made when needed: an error's text). */
const supportedQ = () => `[${SUPPORTED_VERSIONS.map((v) => `"${v}"`).join(' ')}]`;

/** Validates the decoded stdin (stdin.ts decodes it, once) for `command`. */
export async function parseNetConf(doc: Record<string, unknown>, command: Command): Promise<ShimConf> {
  const version = declaredVersion(doc);
  if (!isSupportedVersion(version)) {
    throw new CniError(
      Code.IncompatibleVersion,
      'incompatible CNI versions',
      `config is "${version}", plugin supports ${supportedQ()}`,
    );
  }
  requireVersionFor(command, version);
  const input = { ...doc, cniVersion: version };
  const conf =
    acceptPlainNetConf(input) ??
    parseAs(
      (await import('@ferry/shared-types/cni/config')).NetConfSchema,
      input,
      Code.InvalidConfig,
      'invalid network config',
    );
  // DEL and GC only release: refusing them would keep pods Terminating after an operator edit.
  if (conf.ipam?.type && command !== 'DEL' && command !== 'GC') {
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

/** NetConfSchema's keys whose values acceptPlainNetConf checks itself (the rest send it to the schema). */
export const PLAIN_KEY_CHECKS: Record<string, (v: unknown) => boolean> = {
  cniVersion: (v) => typeof v === 'string',
  name: (v) => typeof v === 'string' && networkNameProblem(v) === undefined,
  type: (v) => typeof v === 'string',
  daemonSocket: (v) => isAbsolutePath(v),
  logFile: (v) => isAbsolutePath(v),
  deleteQueue: (v) => isAbsolutePath(v),
  commitJournal: (v) => isAbsolutePath(v),
  logLevel: (v) => v === 'debug' || v === 'info' || v === 'warn' || v === 'error' || v === 'silent',
  logMaxSizeKiB: (v) => isIntIn(v, 0, SHIM_LOG_MAX_SIZE_KIB_LIMIT),
  logMaxBackups: (v) => isIntIn(v, 0, SHIM_LOG_MAX_BACKUPS_LIMIT),
  mtu: (v) => isIntIn(v, 68, 65535),
  deleteQueueLimit: (v) => isIntIn(v, 1, 1_000_000),
  ipMasq: (v) => typeof v === 'boolean',
  args: (v) => isPlainObject(v),
  prevResult: (v) => v === null || isPlainObject(v),
};

/** NetConfSchema's keys with nested shapes: their presence hands the config to the schema. */
export const SCHEMA_ONLY_KEYS = new Set([
  'runtimeConfig',
  'dns',
  'ipam',
  'delegatedNICs',
  'daemonTimeouts',
  'cni.dev/valid-attachments',
  'cni.dev/attachments',
]);

/**
 * The config as NetConfSchema would return it, when every key is either unknown (kept, as the schema
 * keeps it) or one of Ferry's scalar keys with a valid value; undefined when the schema must decide.
 */
export function acceptPlainNetConf(doc: Record<string, unknown>): NetConf | undefined {
  for (const key of ['cniVersion', 'name', 'type']) if (!(key in doc)) return undefined;
  for (const [key, value] of Object.entries(doc)) {
    if (SCHEMA_ONLY_KEYS.has(key)) return undefined;
    const check = PLAIN_KEY_CHECKS[key];
    if (check && !check(value)) return undefined;
  }
  // Checked above key by key against the schema's own rules (config.test.ts compares with it).
  return { ...doc } as NetConf;
}

const isAbsolutePath = (v: unknown) => typeof v === 'string' && v.startsWith('/');
const isIntIn = (v: unknown, min: number, max: number) =>
  typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
const isPlainObject = (v: unknown) => typeof v === 'object' && v !== null && !Array.isArray(v);
