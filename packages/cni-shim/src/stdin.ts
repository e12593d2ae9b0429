/**
 * The first look at stdin: JSON decoding and the declared cniVersion, without building any schema, so
 * VERSION and early errors stay cheap (config.ts validates the rest).
 */

import { IMPLICIT_VERSION } from '@ferry/shared-types/cni/versions';
import { CniError, Code } from '@ferry/shared-types/errors';
import { utf8Length } from '@ferry/sys/utf8';

/** Larger than any real conflist entry by far; refusing it bounds memory and parse time. */
const MAX_STDIN_BYTES = 1024 * 1024;

export function decodeStdin(stdin: string): Record<string, unknown> {
  if (utf8Length(stdin) > MAX_STDIN_BYTES) {
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
