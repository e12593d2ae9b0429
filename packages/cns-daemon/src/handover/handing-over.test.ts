/**
 * The old side of a hand-over on real unix sockets: a request in flight finishes here, one that arrives
 * meanwhile is held and answered by the successor once its socket is renamed over the path, and a
 * successor that cannot serve the database is refused. test/e2e/rollout.test.ts runs whole ferryds.
 */
import { join } from 'node:path';
import type { Method } from '@ferry/http';
import { requestOverNode } from '@ferry/http/node';
import type { HandOverRequest } from '@ferry/shared-types/api/handover';
import { FERRY_API_VERSION } from '@ferry/shared-types/api/version';
import Fastify from 'fastify';
import pino from 'pino';
import { expect, type TestContext, test } from 'vitest';
import { listenAtPath } from '../socket';
import { tempDir } from '../testing/harness';
import { HANDOVER_PATH, HandingOver } from './handing-over';

async function call(socketPath: string, method: Method, path: string, body?: unknown) {
  const res = await requestOverNode({
    socket: socketPath,
    method,
    path,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    connectMs: 5000,
    deadlineMs: 30_000,
  }).answer();
  return { status: res.status, body: res.body };
}

/** A ferryd stand-in serving `name` on the path, with a route that waits until told to answer. */
async function useServer(t: TestContext, socket: string, name: string, handingOver?: HandingOver) {
  const app = Fastify();
  t.onTestFinished(() => app.close());
  if (handingOver) app.addHook('onRequest', handingOver.onRequest);
  let finishSlow: () => void = () => {};
  const slowStarted = new Promise<void>((started) => {
    app.post('/slow', async () => {
      started();
      await new Promise<void>((r) => {
        finishSlow = r;
      });
      return { from: name };
    });
  });
  app.post('/v1/echo', async (req) => ({ from: name, got: req.body }));
  if (handingOver) app.post(HANDOVER_PATH, async (req) => handingOver.handOver(req.body as HandOverRequest));
  const inode = await listenAtPath((tmp) => app.listen({ path: tmp }), socket);
  handingOver?.listening(inode);
  return { slowStarted, finishSlow: () => finishSlow() };
}

/** The old ferryd's side, with what it was told recorded in `events`. */
function handingOverOf(socket: string, events: string[], takeOverMs?: number): HandingOver {
  return new HandingOver({
    socket,
    schemaVersion: 3,
    log: pino({ level: 'silent' }),
    graceMs: 5000,
    ...(takeOverMs ? { takeOverMs } : {}),
    release: async () => {
      events.push('released');
    },
    onAbandoned: (why) => events.push(`abandoned: ${why}`),
  });
}

const successor = (schemaVersion: number): HandOverRequest => ({
  pid: process.pid,
  apiVersion: FERRY_API_VERSION,
  schemaVersion,
});

test('in flight finishes here, what arrives is held and answered by the successor; the store closes in between', async (t) => {
  const socket = join(tempDir(t), 'ferryd.sock');
  const events: string[] = [];
  const old = handingOverOf(socket, events);
  const a = await useServer(t, socket, 'old', old);
  const inFlight = call(socket, 'POST', '/slow', {});
  await a.slowStarted;
  const answered = call(socket, 'POST', HANDOVER_PATH, successor(3)).then((r) => {
    events.push('answered');
    return r;
  });
  // Held: it arrives after the hand-over began, and is not refused.
  await new Promise((r) => setTimeout(r, 50));
  const held = call(socket, 'POST', '/v1/echo', { n: 1 });
  await new Promise((r) => setTimeout(r, 50));
  expect(events).toEqual([]);
  a.finishSlow();
  expect(JSON.parse((await inFlight).body)).toEqual({ from: 'old' });
  expect((await answered).status).toBe(200);
  expect(events).toEqual(['released', 'answered']);
  // The successor takes the path; the held request reaches it, body and all.
  await useServer(t, socket, 'new');
  expect(JSON.parse((await held).body)).toEqual({ from: 'new', got: { n: 1 } });
  expect(old.ownsPath()).toBe(false);
});

test('a successor whose schema is older than the database is refused, and nothing is held', async (t) => {
  const socket = join(tempDir(t), 'ferryd.sock');
  const events: string[] = [];
  const old = handingOverOf(socket, events);
  await useServer(t, socket, 'old', old);
  const refused = await call(socket, 'POST', HANDOVER_PATH, successor(2));
  expect(refused.status).toBeGreaterThanOrEqual(400);
  expect(refused.body).toContain('older than the database');
  expect(events).toEqual([]);
  expect(JSON.parse((await call(socket, 'POST', '/v1/echo', {})).body)).toMatchObject({ from: 'old' });
});

test('a successor that never takes the socket: held requests get code 11 and the old ferryd is told to end', async (t) => {
  const socket = join(tempDir(t), 'ferryd.sock');
  const events: string[] = [];
  const old = handingOverOf(socket, events, 100);
  await useServer(t, socket, 'old', old);
  expect((await call(socket, 'POST', HANDOVER_PATH, successor(3))).status).toBe(200);
  const held = await call(socket, 'POST', '/v1/echo', {});
  expect(held.status).toBe(503);
  expect(JSON.parse(held.body)).toMatchObject({ code: 11 });
  expect(events).toEqual(['released', expect.stringMatching(/^abandoned: .*it took too long/)]);
});
