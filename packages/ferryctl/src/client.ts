/**
 * ferryd's operator API over the unix socket (default) or the TCP listener with a bearer token, through
 * @ferry/http's Node client; every answer is parsed with the shared schemas, errors decoded as the shim
 * decodes them.
 */
import { type HttpResponse, type Method, UnreachableError } from '@ferry/http';
import { requestOverNode } from '@ferry/http/node';
import { errorOfAnswer } from '@ferry/shared-types/api/error';
import { CniError, Code } from '@ferry/shared-types/errors';
import { parseAs, parseJsonOrUndefined } from '@ferry/shared-types/parse';
import type * as z from 'zod/mini';

export interface Target {
  /** Unix socket path (default /run/ferry/ferryd.sock). */
  socket?: string;
  /** http://host:port of ferryd's TCP listener; needs a token. */
  url?: string;
  token?: string;
  /** For the connection, and for the whole of each request. */
  timeoutMs: number;
}

export class FerrydClient {
  readonly #target: Target;

  constructor(target: Target) {
    this.#target = target;
  }

  /** Where requests go, for messages. */
  get where(): string {
    return this.#target.url ?? `socket ${this.#target.socket}`;
  }

  async call<T>(method: Method, path: string, schema: z.ZodMiniType<T>, body?: unknown): Promise<T> {
    const { url, socket = '', token, timeoutMs } = this.#target;
    let res: HttpResponse;
    try {
      res = await requestOverNode({
        ...(url ? { origin: url } : { socket }),
        method,
        path,
        ...(token ? { headers: { authorization: `Bearer ${token}` } } : {}),
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        connectMs: timeoutMs,
        deadlineMs: timeoutMs,
      }).answer();
    } catch (err) {
      if (!(err instanceof UnreachableError)) throw err;
      throw new CniError(Code.TryAgainLater, `ferryd is unreachable at ${this.where}: ${err.message}`, '', {
        cause: err,
      });
    }
    const request = `ferryd ${method} ${path}`;
    const doc = parseJsonOrUndefined(res.body);
    if (res.status < 200 || res.status >= 300) throw errorOfAnswer(request, res.status, res.body, doc);
    return parseAs(schema, doc, Code.DaemonProtocol, `${request}: unexpected answer`);
  }
}
