import type { Ip } from '@ferry/net';
import type { DaemonClient } from './daemon-client';
import type { Logger } from './log';
import type { Runtime } from './runtime/runtime';

/** What a command needs besides its arguments; main.ts wires them, tests may too. */
export interface Deps {
  daemon: DaemonClient;
  ip: Ip;
  log: Logger;
  /** How long ADD waits for ferryd to be ready. */
  addWaitMs: number;
  /** How long DEL asks a ferryd that is running but does not answer before it queues. */
  delWaitMs: number;
  /** Locks for the delete queue, SHA-256 for derived names. */
  runtime: Runtime;
}
