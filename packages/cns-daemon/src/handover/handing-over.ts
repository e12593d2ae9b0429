/**
 * The old ferryd's side of a rollout without a window (the new side: taking-over.ts). Asked by its
 * successor (POST /v1/handover), it:
 *   1. holds every request that arrives from then on (never refuses one: a shim cannot tell a held
 *      request from a slow one, so no ADD waits for readiness and no DEL is queued);
 *   2. waits for the requests already in flight to be answered (at most `graceMs`);
 *   3. stops everything that uses the database and closes it and its lock (`release`), then answers;
 *   4. watches the socket path: once the successor's socket is renamed over it (atomic for every new
 *      connect), the held requests, and any that still arrive on connections it accepted, are proxied to
 *      the successor with `Connection: close`, so each shim's next connect reaches the new ferryd.
 * If the successor dies, or has not taken the path after `takeOverMs`, the held requests are answered
 * with code 11 (the shim retries, or queues a DEL) and `onAbandoned` ends this ferryd, which cannot open
 * its database again while the successor may hold it: the kubelet restarts it.
 */
import { lstatSync } from 'node:fs';
// A proxy, not a client: it passes a held request on as it came (any method, its headers, its body as a
// stream), which @ferry/http's request contract does not cover.
// biome-ignore lint/plugin: the proxy to the successor (above)
import { type IncomingMessage, request, type ServerResponse } from 'node:http';
import { type HandOverAnswer, type HandOverRequest, handOverProblem } from '@ferry/shared-types/api/handover';
import { FERRY_API_VERSION } from '@ferry/shared-types/api/version';
import { CniError, Code } from '@ferry/shared-types/errors';
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { Logger } from 'pino';

export const HANDOVER_PATH = '/v1/handover';
const WATCH_EVERY_MS = 5;

export interface HandingOverDeps {
  /** The socket path both ferryd listen behind. */
  socket: string;
  schemaVersion: number;
  log: Logger;
  /** How long in-flight requests get before the database closes under them (shutdownGraceSec). */
  graceMs: number;
  /** How long the successor gets to take the socket once the database is its. */
  takeOverMs?: number;
  /** Stops the background work, closes the TCP listener, the database and its lock. Idempotent. */
  release(): Promise<void>;
  /** The successor never took over: this ferryd must end (main exits 1; the kubelet restarts it). */
  onAbandoned(reason: string): void;
}

type State = 'serving' | 'holding' | 'proxying' | 'abandoned';

export class HandingOver {
  readonly #deps: HandingOverDeps;
  #state: State = 'serving';
  #inFlight = 0;
  #onIdle: (() => void) | undefined;
  /** The inode of this ferryd's own socket at the path (listenAtPath's answer). */
  #ownSocket: number | undefined;
  #takenOver: Promise<boolean> | undefined;
  #heldSince = 0;
  #held = 0;

  constructor(deps: HandingOverDeps) {
    this.#deps = deps;
  }

  /** Called once this ferryd's socket is at the path. */
  listening(inode: number): void {
    this.#ownSocket = inode;
  }

  /** Whether the socket at the path is still this ferryd's (stop removes it only then). */
  ownsPath(): boolean {
    return this.#ownSocket !== undefined && inodeAt(this.#deps.socket) === this.#ownSocket;
  }

  /** The first onRequest hook of the unix app: counts requests in flight, holds and proxies after a hand-over. */
  readonly onRequest = (req: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void => {
    if (this.#state === 'serving') {
      if (req.routeOptions.url !== HANDOVER_PATH) {
        this.#inFlight++;
        reply.raw.once('close', this.#finished);
      }
      done();
      return;
    }
    reply.hijack();
    this.#held++;
    const taken = this.#takenOver ?? Promise.resolve(false);
    void taken.then((ok) =>
      ok ? proxy(req.raw, reply.raw, this.#deps.socket, this.#deps.log) : unavailable(reply.raw),
    );
    done();
  };

  readonly #finished = () => {
    this.#inFlight--;
    if (this.#inFlight === 0) this.#onIdle?.();
  };

  /** POST /v1/handover's handler: answers once the database is closed; refuses a successor that cannot serve. */
  async handOver(req: HandOverRequest): Promise<HandOverAnswer> {
    const { log, schemaVersion } = this.#deps;
    if (this.#state !== 'serving') {
      throw new CniError(
        Code.AttachmentConflict,
        `hand over to ferryd ${req.pid}: already handing over (${this.#state})`,
      );
    }
    const problem = handOverProblem({ apiVersion: FERRY_API_VERSION, schemaVersion }, req);
    if (problem) throw new CniError(Code.AttachmentConflict, `hand over to ferryd ${req.pid}: ${problem}`);
    const started = performance.now();
    this.#state = 'holding';
    this.#heldSince = started;
    let resolveTaken: (ok: boolean) => void = () => {};
    this.#takenOver = new Promise((resolve) => {
      resolveTaken = resolve;
    });
    log.info(
      { successor: req.pid, inFlight: this.#inFlight },
      'handing over: holding new requests, finishing in-flight ones',
    );
    await this.#idle();
    await this.#deps.release();
    const releasedInMs = Math.round(performance.now() - started);
    log.info(
      { successor: req.pid, releasedInMs },
      'handing over: database closed; waiting for the successor to take the socket',
    );
    // Watched once the answer is on its way: the successor opens the database only after it has it.
    setImmediate(() => void this.#watch(req.pid).then(resolveTaken));
    return { pid: process.pid, apiVersion: FERRY_API_VERSION, schemaVersion, releasedInMs };
  }

  /** Resolves when no request is in flight, or after graceMs. */
  #idle(): Promise<void> {
    if (this.#inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#deps.log.warn(
          { inFlight: this.#inFlight, graceMs: this.#deps.graceMs },
          'handing over with requests still in flight',
        );
        resolve();
      }, this.#deps.graceMs);
      this.#onIdle = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /** True once the successor's socket is at the path; false when it died or took too long. */
  async #watch(successor: number): Promise<boolean> {
    const { log, socket } = this.#deps;
    const until = Date.now() + (this.#deps.takeOverMs ?? 30_000);
    // Its death is only told if its process can be seen from here at all (another PID namespace cannot).
    const watchable = isAlive(successor);
    for (;;) {
      const inode = inodeAt(socket);
      if (inode !== undefined && inode !== this.#ownSocket) {
        this.#state = 'proxying';
        log.info(
          { successor, held: this.#held, heldMs: Math.round(performance.now() - this.#heldSince) },
          'handed over: the successor serves the socket; held requests go to it',
        );
        return true;
      }
      const reason =
        watchable && !isAlive(successor) ? 'it exited' : Date.now() > until ? 'it took too long' : undefined;
      if (reason) {
        this.#state = 'abandoned';
        const why = `the successor ferryd ${successor} did not take over the socket: ${reason}`;
        log.error(
          { successor, held: this.#held },
          `hand-over failed: ${why}; answering held requests with code 11 and exiting`,
        );
        this.#deps.onAbandoned(why);
        return false;
      }
      await new Promise((r) => setTimeout(r, WATCH_EVERY_MS));
    }
  }
}

function inodeAt(path: string): number | undefined {
  try {
    const st = lstatSync(path);
    return st.isSocket() ? st.ino : undefined;
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** One held request, sent on to the ferryd now at the path, its answer passed back as it comes. */
function proxy(req: IncomingMessage, res: ServerResponse, socketPath: string, log: Logger): void {
  const upstream = request(
    { socketPath, method: req.method, path: req.url, headers: { ...req.headers, connection: 'close' } },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, { ...answer.headers, connection: 'close' });
      answer.pipe(res);
    },
  );
  upstream.on('error', (err) => {
    log.warn({ err, url: req.url }, 'proxying a held request to the successor failed');
    if (!res.headersSent) unavailable(res, `the successor ferryd did not answer: ${err.message}`);
    else res.destroy(err);
  });
  req.pipe(upstream);
}

function unavailable(res: ServerResponse, why = 'the ferryd it was handing over to did not take over'): void {
  const body = JSON.stringify({ code: Code.TryAgainLater, msg: `ferryd is restarting: ${why}; try again` });
  res.writeHead(503, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    connection: 'close',
  });
  res.end(body);
}
