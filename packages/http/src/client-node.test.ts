import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { type AddressInfo, createConnection, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, onTestFinished, test } from 'vitest';
import { type NodeRequestOptions, requestOverNode } from './client-node';
import { UnreachableError } from './request';

function useDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-t-http-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function listen(server: Server, at: string | { host: string; port: number; backlog?: number }): Promise<void> {
  await new Promise<void>((r) => server.listen(at, r));
  onTestFinished(() => new Promise<void>((r) => server.close(() => r())));
}

const ask = (to: { socket: string } | { origin: string }, deadlineMs = 2000, connectMs = 1000) =>
  requestOverNode({ ...to, method: 'GET', path: '/readyz', connectMs, deadlineMs } as NodeRequestOptions)
    .answer()
    .catch((e: unknown) => e);

test('no socket file: unreachable because absent', async () => {
  const err = await ask({ socket: join(useDir(), 'ferryd.sock') });
  expect(err).toBeInstanceOf(UnreachableError);
  expect(err).toMatchObject({ reason: 'absent', message: 'ENOENT' });
});

test('a socket file nobody listens on (what a killed ferryd leaves): unreachable because refused', async () => {
  const dir = useDir();
  const server = createServer();
  await new Promise<void>((r) => server.listen(join(dir, 'live.sock'), r));
  // Moved away first, so closing the server cannot remove it: the file stays, the listener goes.
  renameSync(join(dir, 'live.sock'), join(dir, 'ferryd.sock'));
  await new Promise((r) => server.close(r));
  const err = await ask({ socket: join(dir, 'ferryd.sock') });
  expect(err).toMatchObject({ reason: 'refused', message: 'ECONNREFUSED' });
});

test('a listener that accepts but never answers: unreachable because of the deadline', async () => {
  const socket = join(useDir(), 'ferryd.sock');
  // Reads (so it sees the hang-up when the test ends) and never answers.
  await listen(
    createServer((sock) => sock.resume()),
    socket,
  );
  const err = await ask({ socket }, 200);
  expect(err).toMatchObject({ reason: 'timeout', message: 'no answer within 200 ms' });
});

test('the deadline covers the body: headers in time, the rest never', async () => {
  const socket = join(useDir(), 'ferryd.sock');
  await listen(
    createServer((sock) => sock.once('data', () => sock.write('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"ab'))),
    socket,
  );
  expect(await ask({ socket }, 300)).toMatchObject({ reason: 'timeout', message: 'no answer within 300 ms' });
});

test('a listener that hangs up after reading the request: unreachable, saying so', async () => {
  const socket = join(useDir(), 'ferryd.sock');
  await listen(
    createServer((sock) => sock.once('data', () => sock.end())),
    socket,
  );
  expect(await ask({ socket })).toMatchObject({
    reason: 'other',
    message: 'bad answer: the connection closed before the whole answer',
  });
});

test('an answer that is not HTTP: unreachable, naming the parse error', async () => {
  const socket = join(useDir(), 'ferryd.sock');
  await listen(
    createServer((sock) => sock.once('data', () => sock.end('SSH-2.0-OpenSSH_9.2\r\n'))),
    socket,
  );
  expect(await ask({ socket })).toMatchObject({
    reason: 'other',
    message: expect.stringMatching(/^bad answer: Parse Error/),
  });
});

test('a listener that hangs up before a whole answer: unreachable, saying so', async () => {
  const socket = join(useDir(), 'ferryd.sock');
  await listen(
    createServer((sock) => sock.once('data', () => sock.end('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"ab'))),
    socket,
  );
  expect(await ask({ socket })).toMatchObject({
    reason: 'other',
    message: 'bad answer: the connection closed before the whole answer',
  });
});

/**
 * A TCP listener on loopback in a process stopped with SIGSTOP, its accept queue filled: the kernel
 * drops a further SYN, so a connect neither succeeds nor fails until its own timeout.
 */
async function useFullTcpListener(): Promise<string> {
  const child = spawn(
    process.execPath,
    [
      '-e',
      `const s = require('node:net').createServer().listen({ host: '127.0.0.1', port: 0, backlog: 1 }, () => process.stdout.write(String(s.address().port)))`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  onTestFinished(() => {
    child.kill('SIGKILL');
  });
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout.once('data', (d: Buffer) => resolve(d.toString()));
    child.once('exit', (code) => reject(new Error(`the listener exited with ${code}`)));
  });
  child.kill('SIGSTOP');
  const held: Socket[] = [];
  onTestFinished(() => {
    for (const s of held) s.destroy();
  });
  for (;;) {
    const s = createConnection({ host: '127.0.0.1', port: Number(port) });
    held.push(s);
    const connected = await new Promise<boolean>((resolve) => {
      const t = setTimeout(() => resolve(false), 200);
      s.once('connect', () => {
        clearTimeout(t);
        resolve(true);
      });
    });
    if (!connected) return `http://127.0.0.1:${port}`;
    if (held.length > 64) throw new Error('the accept queue never filled');
  }
}

test('a connect that hangs ends at connectMs, well before the deadline, and says so', async () => {
  const origin = await useFullTcpListener();
  // The deadline's end would say "no answer within 5000 ms".
  const err = await ask({ origin }, 5000, 150);
  expect(err).toMatchObject({ reason: 'timeout', message: 'connect timed out after 150 ms' });
});

test('sent when made, answered when asked: the server has the request before anyone awaits it', async () => {
  const socket = join(useDir(), 'ferryd.sock');
  const seen: string[] = [];
  const server = createHttpServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    seen.push(`${req.method} ${req.url} ${req.headers['content-type']} ${req.headers.authorization} ${body}`);
    res.writeHead(201, { 'content-type': 'application/json', 'ferry-api': '1' }).end('{"ok":true}');
  });
  await listen(server, socket);
  const sent = requestOverNode({
    socket,
    method: 'POST',
    path: '/v1/gc?network=ferry',
    body: '{"a":1}',
    headers: { authorization: 'Bearer t' },
    connectMs: 1000,
    deadlineMs: 2000,
  });
  await expect.poll(() => seen).toEqual(['POST /v1/gc?network=ferry application/json Bearer t {"a":1}']);
  const answer = await sent.answer();
  expect(answer).toMatchObject({ status: 201, body: '{"ok":true}' });
  // Header fields by lower-case name, as the libc client gives them.
  expect(answer.headers.get('ferry-api')).toBe('1');
  expect(answer.headers.get('content-type')).toBe('application/json');
  // Asking again gives the same answer, with no second request.
  expect(await sent.answer()).toBe(answer);
  expect(seen).toHaveLength(1);
});

test('an http origin instead of a socket', async () => {
  const server = createHttpServer((_req, res) => res.end('pong'));
  await listen(server, { host: '127.0.0.1', port: 0 });
  const { port } = server.address() as AddressInfo;
  expect(await ask({ origin: `http://127.0.0.1:${port}` })).toMatchObject({ status: 200, body: 'pong' });
});

test('a repeated header field: its values joined with commas, as the libc client gives them', async () => {
  const socket = join(useDir(), 'ferryd.sock');
  await listen(
    createHttpServer((_req, res) =>
      res
        .writeHead(200, [
          ['Warning', 'a'],
          ['warning', 'b'],
        ])
        .end(),
    ),
    socket,
  );
  const answer = (await ask({ socket })) as { headers: Map<string, string> };
  expect(answer.headers.get('warning')).toBe('a,b');
});

test('an https origin, trusting the CA it is given and no other', async () => {
  const dir = useDir();
  const [key, cert] = [join(dir, 'tls.key'), join(dir, 'tls.crt')];
  execFileSync(
    'openssl',
    [
      ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'],
      ...[
        '-keyout',
        key,
        '-out',
        cert,
        '-days',
        '1',
        '-subj',
        '/CN=kubernetes',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
      ],
    ],
    { stdio: 'ignore' },
  );
  const server = createHttpsServer({ key: readFileSync(key), cert: readFileSync(cert) }, (_req, res) =>
    res.end('pong'),
  );
  await listen(server, { host: '127.0.0.1', port: 0 });
  const origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const ca = readFileSync(cert, 'utf8');
  const trusted = await requestOverNode({
    origin,
    ca,
    method: 'GET',
    path: '/',
    connectMs: 1000,
    deadlineMs: 2000,
  }).answer();
  expect(trusted).toMatchObject({ status: 200, body: 'pong' });
  // Without the CA, Node's own roots do not vouch for it: a failed call with its code.
  expect(await ask({ origin })).toMatchObject({ reason: 'other', message: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
});
