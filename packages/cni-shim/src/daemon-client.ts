/**
 * ferryd's API as the shim uses it: every call has a connect timeout and a total deadline, every answer
 * is parsed with the shared schemas (our own daemon is still a boundary). "Unreachable" (no socket,
 * refused, timed out) is code 11, TryAgainLater; an answer with an error body is passed through
 * with the daemon's code; anything else is DaemonProtocol. Response schemas are imported when a call
 * needs them: building every API schema at start-up would cost each pod's ADD several milliseconds. The
 * answers of commit and of the unconditional release are not used, so they are not parsed either
 * (ferryd's own tests check every answer against its schema). `allocate` and `getEndpoint` return the
 * request in flight: ADD and CHECK work while ferryd answers, and wait for it when they ask. Every request
 * states this build's API version and every answer is checked against ferryd's (api/version.ts): a pair
 * outside the version-skew rule is code 117, ApiVersionSkew.
 */
import { type HttpResponse, type InFlight, type Method, mapAnswer, UnreachableError } from '@ferry/http';
import type { AllocateRequest, Allocation } from '@ferry/shared-types/api/allocations';
import type { CommitRequest, Endpoint, ReleaseResult } from '@ferry/shared-types/api/endpoints';
import type { GcRequest, GcResult } from '@ferry/shared-types/api/gc';
import type { Status } from '@ferry/shared-types/api/status';
import { apiSkewOf, FERRY_API_HEADER, FERRY_API_VERSION, parseApiVersion } from '@ferry/shared-types/api/version';
import { isAllocation, isEndpoint, isReleaseResult } from '@ferry/shared-types/checks';
import { CniError, Code } from '@ferry/shared-types/errors';
import { describeFirstIssue, parseJsonOrUndefined } from '@ferry/shared-types/parse';
import type * as z from 'zod/mini';
import type { Logger } from './log';
import type { Runtime } from './runtime/runtime';

/** ferryd down, starting or draining: code 11, whether the transport or ferryd itself said so. */
export const isDaemonDown = (err: unknown): err is CniError =>
  err instanceof CniError && err.code === Code.TryAgainLater;

/**
 * No ferryd is running: its socket is absent or refuses connections. Unlike a timeout (a frozen or busy
 * ferryd), asking again cannot help before ferryd is restarted.
 */
export const isNotListening = (err: unknown): err is CniError =>
  isDaemonDown(err) &&
  err.cause instanceof UnreachableError &&
  (err.cause.reason === 'absent' || err.cause.reason === 'refused');

/** Sent with every request: the version-skew rule's half that ferryd checks. */
const API_VERSION_HEADERS = { [FERRY_API_HEADER]: String(FERRY_API_VERSION) };

export interface DaemonTimeoutsMs {
  connectMs: number;
  requestMs: number;
}

export class DaemonClient {
  readonly socket: string;
  readonly #runtime: Runtime;
  readonly #t: DaemonTimeoutsMs;
  readonly #log: Logger;

  constructor(runtime: Runtime, socket: string, timeouts: DaemonTimeoutsMs, log: Logger) {
    this.#runtime = runtime;
    this.socket = socket;
    this.#t = timeouts;
    this.#log = log;
  }

  allocate(req: AllocateRequest): InFlight<Allocation> {
    return this.#call(
      'POST',
      '/v1/allocations',
      async () => (await import('@ferry/shared-types/api/allocations')).AllocationSchema,
      req,
      undefined,
      isAllocation,
    );
  }

  /** The commit as a request, for where the commit journal cannot be written (ADD's usual commit is a journal entry). */
  async commitWithoutJournal(containerId: string, req: CommitRequest): Promise<void> {
    await this.#exchange('PUT', `/v1/endpoints/${encodeURIComponent(containerId)}`, req).answer();
  }

  /** The container's endpoint, or undefined when ferryd holds none. `deadlineMs` caps this one call. */
  getEndpoint(containerId: string, deadlineMs?: number): InFlight<Endpoint | undefined> {
    const path = `/v1/endpoints/${encodeURIComponent(containerId)}`;
    const asked = this.#call('GET', path, endpointSchema, undefined, deadlineMs, isEndpoint);
    return mapAnswer(asked, async (answer) => {
      try {
        return await answer;
      } catch (err) {
        if (err instanceof CniError && err.code === Code.EndpointNotFound) return undefined;
        throw err;
      }
    });
  }

  /** Releases the attachment; with `generation`, only that generation of it. */
  async release(containerId: string, network: string, ifName: string, generation?: number): Promise<void> {
    const g = generation === undefined ? '' : `&generation=${generation}`;
    const q = `network=${encodeURIComponent(network)}&ifName=${encodeURIComponent(ifName)}${g}`;
    await this.#exchange('DELETE', `/v1/endpoints/${encodeURIComponent(containerId)}?${q}`).answer();
  }

  /**
   * The usual DEL in one request, once the shim has deleted the attachment's host veth: releases the
   * attachment only if that InfraNIC is all it has; otherwise nothing is released and the answer's
   * `toTearDown` lists the attachment's interfaces. `deadlineMs` caps this one call.
   */
  releaseIfOnly(containerId: string, network: string, ifName: string, deadlineMs?: number): Promise<ReleaseResult> {
    const q = `network=${encodeURIComponent(network)}&ifName=${encodeURIComponent(ifName)}&hostVethDeleted=true`;
    return this.#call(
      'DELETE',
      `/v1/endpoints/${encodeURIComponent(containerId)}?${q}`,
      async () => (await import('@ferry/shared-types/api/endpoints')).ReleaseResultSchema,
      undefined,
      deadlineMs,
      isReleaseResult,
    ).answer();
  }

  gc(req: GcRequest): Promise<GcResult> {
    return this.#call(
      'POST',
      '/v1/gc',
      async () => (await import('@ferry/shared-types/api/gc')).GcResultSchema,
      req,
    ).answer();
  }

  status(network: string): Promise<Status> {
    return this.#call(
      'GET',
      `/v1/status?network=${encodeURIComponent(network)}`,
      async () => (await import('@ferry/shared-types/api/status')).StatusSchema,
    ).answer();
  }

  /** One look at /readyz: true when ferryd answers ready within `deadlineMs`. */
  async isReady(deadlineMs: number): Promise<boolean> {
    return (await this.#readiness(deadlineMs)) === undefined;
  }

  /** Resolves once /readyz says ready; polls every 100 ms for at most `waitMs`, then throws code 11. */
  async waitReady(waitMs: number): Promise<void> {
    const until = Date.now() + waitMs;
    for (;;) {
      const notReady = await this.#readiness(Math.max(1, Math.min(this.#t.requestMs, until - Date.now())));
      if (notReady === undefined) return;
      if (Date.now() + 100 > until) {
        throw new CniError(Code.TryAgainLater, `ferryd at ${this.socket} is not ready after ${waitMs} ms: ${notReady}`);
      }
      await new Promise((res) => setTimeout(res, 100));
    }
  }

  /** undefined when ferryd is ready, otherwise why not. */
  async #readiness(deadlineMs: number): Promise<string | undefined> {
    try {
      const r = await this.#send('GET', '/readyz', undefined, deadlineMs).answer();
      const { ReadinessSchema } = await import('@ferry/shared-types/api/status');
      const body = ReadinessSchema.safeParse(parseJsonOrUndefined(r.body));
      if (r.status === 200 && body.success && body.data.ready) return undefined;
      return body.success ? `ferryd is ${body.data.phase}` : `readyz answered ${r.status}`;
    } catch (err) {
      return (err as Error).message;
    }
  }

  /**
   * A call whose answer is used: taken as it is when `check` (generated from `schema`,
   * @ferry/shared-types/checks) accepts it, else parsed with `schema`, which is loaded only then.
   */
  #call<T>(
    method: Method,
    path: string,
    schema: () => Promise<z.ZodMiniType<T>>,
    body?: unknown,
    deadlineMs?: number,
    check?: (doc: unknown) => doc is T,
  ): InFlight<T> {
    return mapAnswer(this.#exchange(method, path, body, deadlineMs), async (answer) => {
      const doc = await answer;
      if (check?.(doc)) return doc;
      const parsed = (await schema()).safeParse(doc);
      if (parsed.success) return parsed.data;
      throw new CniError(
        Code.DaemonProtocol,
        `ferryd ${method} ${path}: unexpected answer: ${describeFirstIssue(parsed.error)}`,
      );
    });
  }

  /** Sends one request; its answer is the decoded body of a 2xx answer, or throws the CniError of any other. */
  #exchange(method: Method, path: string, body?: unknown, deadlineMs?: number): InFlight<unknown> {
    const started = Date.now();
    this.#log.debug({ method, path }, 'asking ferryd');
    const deadline = Math.min(this.#t.requestMs, deadlineMs ?? this.#t.requestMs);
    const sent = this.#send(method, path, body === undefined ? undefined : JSON.stringify(body), deadline);
    return mapAnswer(sent, async (answer) => {
      const r = await answer;
      this.#log.debug({ method, path, status: r.status, tookMs: Date.now() - started }, 'ferryd answered');
      const skew = apiSkewOf(FERRY_API_VERSION, parseApiVersion(r.headers.get(FERRY_API_HEADER)));
      if (skew !== undefined) throw new CniError(Code.ApiVersionSkew, `ferryd ${method} ${path}: ${skew}`);
      const doc = parseJsonOrUndefined(r.body);
      if (r.status >= 200 && r.status < 300) return doc;
      // Imported on an error only: its schema is built when its module loads.
      const { errorOfAnswer } = await import('@ferry/shared-types/api/error');
      throw errorOfAnswer(`ferryd ${method} ${path}`, r.status, r.body, doc);
    });
  }

  #send(method: Method, path: string, body: string | undefined, deadlineMs: number): InFlight<HttpResponse> {
    const sent = this.#runtime.request({
      socket: this.socket,
      method,
      path,
      headers: API_VERSION_HEADERS,
      ...(body !== undefined ? { body } : {}),
      connectMs: this.#t.connectMs,
      deadlineMs,
    });
    return mapAnswer(sent, async (answer) => {
      try {
        return await answer;
      } catch (err) {
        if (err instanceof UnreachableError) {
          throw new CniError(Code.TryAgainLater, `ferryd at ${this.socket} is unreachable: ${err.message}`, '', {
            cause: err,
          });
        }
        throw err;
      }
    });
  }
}

const endpointSchema = async () => (await import('@ferry/shared-types/api/endpoints')).EndpointSchema;
