/**
 * The network config on stdin: decoded (code 6), version-checked (code 1, in skel's words), then
 * validated (code 7 naming the field). Ferry allocates through ferryd, so a delegated `ipam` is refused
 * on the commands that set up or inspect (never on DEL or GC) rather than silently ignored.
 *
 * Building NetConfSchema costs ~2 ms of every command (zod constructs run cold once per process), so a
 * config is first checked by the check generated from it (@ferry/shared-types/checks, scripts/checks);
 * one that does not pass goes through the schema, which also words every error.
 */
import { isNetConf } from '@ferry/shared-types/checks';
import type { NetConf } from '@ferry/shared-types/cni/config';
import { type CniVersion, isSupportedVersion, SUPPORTED_VERSIONS, specHas } from '@ferry/shared-types/cni/versions';
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
  const conf = isNetConf(input)
    ? input
    : parseAs(
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
