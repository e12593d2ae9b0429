/**
 * The new ferryd's side of a rollout without a window (the old side: handing-over.ts). Its database is
 * held by the ferryd serving the node (a DaemonSet with surge starts the new pod beside the old): it asks
 * that one, over the socket, to hand over, and opens the database once the answer says it is closed. The
 * socket follows later: startDaemon renames its own over the path once it is ready, and the old ferryd
 * proxies what it held meanwhile. A ferryd holding the lock but not listening yet (itself starting) is
 * asked again until `waitMs`; one that refuses (it cannot be replaced by this version) stops start-up.
 */
import { requestOverNode } from '@ferry/http/node';
import { errorOfAnswer } from '@ferry/shared-types/api/error';
import { type HandOverAnswer, HandOverAnswerSchema } from '@ferry/shared-types/api/handover';
import { FERRY_API_VERSION } from '@ferry/shared-types/api/version';
import { parseJsonOrUndefined } from '@ferry/shared-types/parse';
import type { Logger } from 'pino';
import * as z from 'zod/mini';
import { StartupError } from '../errors';
import { DatabaseError, lockHolderOf, type OpenDbOptions, type OpenedDb, openDatabase } from '../store/db';
import { SCHEMA_VERSION } from '../store/migrations/index';
import { HANDOVER_PATH } from './handing-over';

const ASK_AGAIN_MS = 100;
/** The old ferryd answers once its in-flight requests are done (shutdownGraceSec at most) and its store is closed. */
const ANSWER_WITHIN_MS = 60_000;

export interface TakeOverOptions extends OpenDbOptions {
  /** The socket this ferryd will serve: the one its predecessor serves. */
  socket: string;
  log: Logger;
  /** How long a holder that does not listen (it is starting) is asked again. */
  waitMs: number;
}

/** The database, opened; taken over from the ferryd holding it when there is one. */
export async function openTakingOver(
  path: string,
  opts: TakeOverOptions,
): Promise<OpenedDb & { from?: HandOverAnswer }> {
  const until = Date.now() + opts.waitMs;
  let from: HandOverAnswer | undefined;
  for (;;) {
    try {
      return { ...openDatabase(path, opts), ...(from ? { from } : {}) };
    } catch (err) {
      if (!(err instanceof DatabaseError && err.problem === 'in-use') || Date.now() > until) throw err;
      // A holder that serves another socket is another ferryd's configuration, not a predecessor.
      const holder = lockHolderOf(path);
      if (holder.socket && holder.socket !== opts.socket) {
        throw new DatabaseError('in-use', `${err.message}: ferryd ${holder.pid ?? '?'} serves ${holder.socket}`);
      }
    }
    if (from) {
      // Answered, so its lock is gone or going: the kernel drops a flock with the last descriptor.
      await sleep(5);
      continue;
    }
    const asked = await askToHandOver(opts.socket).catch((err: unknown) => err as Error);
    if (asked instanceof HandOverRefused) throw new StartupError(asked.message);
    if (asked instanceof Error) {
      opts.log.info(
        { socket: opts.socket, cause: asked.message },
        'database held by a ferryd that does not answer yet; asking again',
      );
      await sleep(ASK_AGAIN_MS);
      continue;
    }
    from = asked;
    opts.log.info(
      { from: asked.pid, releasedInMs: asked.releasedInMs },
      'taking over: the serving ferryd closed its database',
    );
  }
}

class HandOverRefused extends Error {}

async function askToHandOver(socketPath: string): Promise<HandOverAnswer> {
  const body = JSON.stringify({ pid: process.pid, apiVersion: FERRY_API_VERSION, schemaVersion: SCHEMA_VERSION });
  const res = await requestOverNode({
    socket: socketPath,
    method: 'POST',
    path: HANDOVER_PATH,
    body,
    connectMs: ANSWER_WITHIN_MS,
    deadlineMs: ANSWER_WITHIN_MS,
  }).answer();
  const doc = parseJsonOrUndefined(res.body);
  if (res.status === 200) {
    const r = z.safeParse(HandOverAnswerSchema, doc);
    if (r.success) return r.data;
    throw new HandOverRefused(`take over from the serving ferryd: unexpected answer ${res.body.slice(0, 200)}`);
  }
  // A 404 is a ferryd that cannot hand over; any other error its reason, decoded as every client does.
  const refused = errorOfAnswer(`ferryd POST ${HANDOVER_PATH}`, res.status, res.body, doc);
  throw new HandOverRefused(`take over from the ferryd serving ${socketPath}: refused: ${refused.message}`);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
