import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Code } from '@ferry/shared-types/errors';
import { expect, onTestFinished, test } from 'vitest';
import * as z from 'zod/mini';
import { FerrydClient } from './client';

const OkSchema = z.object({ ok: z.boolean() });

/** A stand-in for ferryd on a unix socket in a fresh temp dir, answering with `handle`. */
async function useFerryd(handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-t-ctl-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const socket = join(dir, 'ferryd.sock');
  const server = createServer(handle);
  await new Promise<void>((r) => server.listen(socket, r));
  onTestFinished(() => new Promise<void>((r) => server.close(() => r())));
  return socket;
}

const json = (res: ServerResponse, status: number, body: unknown) =>
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

test('an answer is parsed with the schema; one that does not fit is DaemonProtocol naming the field', async () => {
  const socket = await useFerryd((req, res) => json(res, 200, req.url === '/good' ? { ok: true } : { ok: 'yes' }));
  const client = new FerrydClient({ socket, timeoutMs: 2000 });
  expect(await client.call('GET', '/good', OkSchema)).toEqual({ ok: true });
  await expect(client.call('GET', '/bad', OkSchema)).rejects.toMatchObject({
    code: Code.DaemonProtocol,
    message: 'ferryd GET /bad: unexpected answer: ok: expected boolean',
  });
});

test("ferryd's errors come through with their code; a body that is not one is quoted", async () => {
  const socket = await useFerryd((req, res) => {
    if (req.url === '/conflict') json(res, 409, { code: Code.AttachmentConflict, msg: 'in use' });
    else res.writeHead(503).end('storage failing');
  });
  const client = new FerrydClient({ socket, timeoutMs: 2000 });
  await expect(client.call('POST', '/conflict', OkSchema, {})).rejects.toMatchObject({
    code: Code.AttachmentConflict,
    message: 'in use',
  });
  await expect(client.call('GET', '/readyz', OkSchema)).rejects.toMatchObject({
    code: Code.DaemonProtocol,
    message: 'ferryd GET /readyz: HTTP 503: storage failing',
  });
});

test('no ferryd: code 11 (exit 3), naming where it was looked for and why', async () => {
  const socket = join(mkdtempSync(join(tmpdir(), 'ferry-t-ctl-')), 'ferryd.sock');
  onTestFinished(() => rmSync(join(socket, '..'), { recursive: true, force: true }));
  await expect(new FerrydClient({ socket, timeoutMs: 2000 }).call('GET', '/healthz', OkSchema)).rejects.toMatchObject({
    code: Code.TryAgainLater,
    message: `ferryd is unreachable at socket ${socket}: ENOENT`,
  });
});

test('over TCP with a token: the bearer header and the JSON body are sent', async () => {
  const seen: string[] = [];
  const server = createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    seen.push(`${req.method} ${req.url} ${req.headers.authorization} ${req.headers['content-type']} ${body}`);
    json(res, 200, { ok: true });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  onTestFinished(() => new Promise<void>((r) => server.close(() => r())));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client = new FerrydClient({ url, token: 's3cret', timeoutMs: 2000 });
  expect(client.where).toBe(url);
  expect(await client.call('POST', '/v1/operator/reconcile', OkSchema, { now: true })).toEqual({ ok: true });
  expect(seen).toEqual(['POST /v1/operator/reconcile Bearer s3cret application/json {"now":true}']);
});
