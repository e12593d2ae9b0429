import { CniError, Code } from '@ferry/shared-types/errors';

/** JSON.parse that fails as a CNI error (code 6) naming `where`, never a bare SyntaxError. */
export function parseJson(text: string, where: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new CniError(Code.DecodeFailure, `${where}: ${(err as Error).message}`);
  }
}
