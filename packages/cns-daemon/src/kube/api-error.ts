/**
 * What a failed call of the Kubernetes API means for the caller, decided once, from the HTTP status and
 * the Status object the API server sent (never from message text): the kinds the IPAM client and leader
 * election branch on. 409 is two kinds: AlreadyExists (a create lost to another creator: someone holds
 * the name) and Conflict (a stale resourceVersion or a failed precondition: read again).
 */
import * as z from 'zod/mini';
import { describeApiError, httpStatusOfApiError, messageOf } from './connection';

export type KubeApiErrorKind =
  /** 409 AlreadyExists: a create of a name that exists. */
  | 'exists'
  /** 409 Conflict: the resourceVersion or a precondition no longer holds. */
  | 'conflict'
  /** 404 (or 410): the object, or the resource itself (a CRD not installed), is not there. */
  | 'gone'
  /** No answer (connection refused or cut, the deadline), 429 or 5xx: the API server is away; retry later. */
  | 'unavailable'
  /** 401 or 403: the credentials or RBAC do not allow it; retrying does not help until an operator acts. */
  | 'forbidden'
  /** 400, 415 or 422, or an answer that is not what the schema says: the request or the object is wrong. */
  | 'invalid';

const BRAND = Symbol.for('ferry.KubeApiError');

export class KubeApiError extends Error {
  readonly [BRAND] = true;
  /** The HTTP status, when the API server answered. */
  readonly httpStatus: number | undefined;

  constructor(
    readonly kind: KubeApiErrorKind,
    message: string,
    opts: { httpStatus?: number; cause?: unknown } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'KubeApiError';
    this.httpStatus = opts.httpStatus;
  }

  /** Worth trying again later without anyone's help. */
  get isRetryable(): boolean {
    return this.kind === 'unavailable';
  }

  static is(err: unknown): err is KubeApiError {
    return typeof err === 'object' && err !== null && BRAND in err;
  }
}

const StatusBodySchema = z.object({ reason: z.optional(z.string()), message: z.optional(z.string()) });
const ErrorBodySchema = z.object({ body: z.optional(z.unknown()) });

/** The reason of the Status the API server answered with (AlreadyExists, Conflict…), if it sent one. */
export function statusReasonOf(err: unknown): string | undefined {
  const e = ErrorBodySchema.safeParse(err);
  if (!e.success) return undefined;
  let body = e.data.body;
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body);
    } catch {
      return undefined;
    }
  }
  const s = StatusBodySchema.safeParse(body);
  return s.success ? s.data.reason : undefined;
}

function kindOf(status: number | undefined, reason: string | undefined): KubeApiErrorKind {
  if (status === undefined) return 'unavailable';
  if (status === 409) return reason === 'AlreadyExists' ? 'exists' : 'conflict';
  if (status === 404 || status === 410) return 'gone';
  if (status === 401 || status === 403) return 'forbidden';
  if (status === 429 || status >= 500) return 'unavailable';
  return 'invalid';
}

/** The client's error as a KubeApiError; `what` says which call ("create ipblocks ferry.v4.10-244-3-0-26"). */
export function toKubeApiError(err: unknown, what: string): KubeApiError {
  if (KubeApiError.is(err)) return err;
  const httpStatus = httpStatusOfApiError(err);
  const kind = kindOf(httpStatus, statusReasonOf(err));
  const why = httpStatus === undefined ? `kubernetes api: ${messageOf(err)}` : describeApiError(err);
  return new KubeApiError(kind, `${what}: ${why}`, { ...(httpStatus === undefined ? {} : { httpStatus }), cause: err });
}
