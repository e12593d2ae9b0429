/**
 * ferryd's operator API over the unix socket (default) or the TCP listener with a bearer token.
 * undici 7 is the client (Node 20); every answer is parsed with the shared schemas.
 */
import { CniErrorSchema } from '@ferry/shared-types/api/error';
import { CniError, Code, isCode } from '@ferry/shared-types/errors';
import { describeFirstIssue } from '@ferry/shared-types/parse';
import { Agent, type Dispatcher, request } from 'undici';
import type * as z from 'zod/mini';

export interface Target {
  /** Unix socket path (default /run/ferry/ferryd.sock). */
  socket?: string;
  /** http://host:port of ferryd's TCP listener; needs a token. */
  url?: string;
  token?: string;
  timeoutMs: number;
}

export class FerrydClient {
  readonly #target: Target;
  readonly #dispatcher: Dispatcher;
  readonly #origin: string;

  constructor(target: Target) {
    this.#target = target;
    this.#origin = target.url ?? 'http://ferryd';
    this.#dispatcher = new Agent(
      target.url
        ? { connectTimeout: target.timeoutMs }
        : { connect: { socketPath: target.socket }, connectTimeout: target.timeoutMs },
    );
  }

  /** Where requests go, for messages. */
  get where(): string {
    return this.#target.url ?? `socket ${this.#target.socket}`;
  }

  async call<T>(
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    path: string,
    schema: z.ZodMiniType<T>,
    body?: unknown,
  ): Promise<T> {
    let res: Dispatcher.ResponseData;
    try {
      res = await request(`${this.#origin}${path}`, {
        method,
        dispatcher: this.#dispatcher,
        headersTimeout: this.#target.timeoutMs,
        bodyTimeout: this.#target.timeoutMs,
        headers: {
          ...(this.#target.token ? { authorization: `Bearer ${this.#target.token}` } : {}),
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
    } catch (err) {
      const e = err as Error & { code?: string };
      throw new CniError(Code.TryAgainLater, `ferryd is unreachable at ${this.where}: ${e.code ?? e.message}`);
    }
    const text = await res.body.text();
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch {
      doc = undefined;
    }
    if (res.statusCode >= 200 && res.statusCode < 300) {
      const r = schema.safeParse(doc);
      if (r.success) return r.data;
      throw new CniError(
        Code.DaemonProtocol,
        `ferryd ${method} ${path}: unexpected answer: ${describeFirstIssue(r.error)}`,
      );
    }
    const err = CniErrorSchema.safeParse(doc);
    if (err.success && isCode(err.data.code)) throw new CniError(err.data.code, err.data.msg, err.data.details ?? '');
    // Not CNI-shaped (a 503 from /readyz, say): the body says why, e.g. which storage is failing.
    throw new CniError(Code.DaemonProtocol, `ferryd ${method} ${path}: HTTP ${res.statusCode}: ${text.slice(0, 500)}`);
  }

  async close(): Promise<void> {
    await this.#dispatcher.close();
  }
}
