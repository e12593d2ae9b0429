/**
 * The shim's seam to its runtime. The shipped binary is compiled by Bun, whose own APIs start in a few
 * milliseconds while its Node-compatibility layers (node:http, child_process) cost tens (docs/shipping.md);
 * tests that run sources use Node. Everything that differs between the two lives behind this interface.
 */
import type { Runner } from '@ferry/net';

export interface HttpResponse {
  status: number;
  body: string;
}

/** ferryd could not be reached: no socket, refused, or no answer before the deadline. */
export class UnreachableError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'UnreachableError';
  }
}

export interface RequestOptions {
  socket: string;
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  body?: string;
  /** Time to establish the connection. */
  connectMs: number;
  /** Total time, response included. */
  deadlineMs: number;
}

export interface Runtime {
  /** Spawns a process without a shell (used by @ferry/net). */
  run: Runner;
  /** One HTTP request over a unix socket. Throws UnreachableError when ferryd cannot be reached. */
  request(opts: RequestOptions): Promise<HttpResponse>;
}
