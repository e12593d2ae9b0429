import type { Ip } from '@ferry/net';
import type { DaemonClient } from './daemon-client';
import type { Logger } from './log';

/** What a command needs besides its arguments; main.ts wires them, tests may too. */
export interface Deps {
  daemon: DaemonClient;
  ip: Ip;
  log: Logger;
  /** How long ADD waits for ferryd to be ready. */
  addWaitMs: number;
}
