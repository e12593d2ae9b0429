/** The error body as a schema, for parsing what ferryd answers. */
import * as z from 'zod/mini';
import { CniError, type CniErrorBody, Code, isCode } from '../errors';

/** The wire shape of an error: what ferryd sends and what ferry-cni prints (plus cniVersion). */
export const CniErrorSchema: z.ZodMiniType<CniErrorBody> = z.object({
  cniVersion: z.optional(z.string()),
  code: z.number().check(z.int()),
  msg: z.string(),
  details: z.optional(z.string()),
});

/** How much of an answer that is not CNI-shaped an error quotes. */
const QUOTED_CHARS = 500;

/**
 * The error a non-2xx answer of ferryd stands for, so that ferry-cni and ferryctl pass it on alike: ferryd's
 * own CNI-shaped body with its code; anything else (a 503 from /readyz, a proxy's page) is DaemonProtocol,
 * naming `request` (`ferryd GET /readyz`), the status and the start of the body, which says why. `doc` is
 * the body decoded (parseJsonOrUndefined), as the caller has it already.
 */
export function errorOfAnswer(request: string, status: number, body: string, doc: unknown): CniError {
  const err = CniErrorSchema.safeParse(doc);
  if (err.success && isCode(err.data.code)) return new CniError(err.data.code, err.data.msg, err.data.details ?? '');
  return new CniError(Code.DaemonProtocol, `${request}: HTTP ${status}: ${body.slice(0, QUOTED_CHARS)}`);
}
