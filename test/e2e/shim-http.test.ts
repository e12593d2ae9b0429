/**
 * The shipped shim's HTTP/1.1 client (packages/http/src/client-libc.ts: libc calls, no library) against
 * what a ferryd socket can do besides answering plainly: a real ferryd whose answers come chunked and in
 * pieces (through a proxy), listeners that hang up before a whole answer or never answer, and a listener
 * whose accept backlog is full. The messages are this client's: the Node build (FERRY_SHIM=node) also
 * answers 11 everywhere, worded as its node:http client says it (EAGAIN at once for the full backlog).
 */
import { spawn } from 'node:child_process';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { netConf, newContainerId } from '../fixtures/conf';
import { useFerrydProxy } from '../fixtures/ferryd-proxy';
import { linkNames } from '../fixtures/kernel';
import { useNetns } from '../fixtures/netns';
import { useNode, useNodeNetns } from '../fixtures/node';
import { trackChild } from '../fixtures/process';
import type { Scope } from '../fixtures/scope';
import { runShim } from '../fixtures/shim';
import { useTmpDir } from '../fixtures/tmp';

async function listen(t: Scope, server: Server, path: string): Promise<void> {
  await new Promise<void>((resolve) => server.listen(path, resolve));
  t.onTestFinished(() => new Promise<void>((r) => server.close(() => r())));
}

/**
 * A listener standing in for ferryd on a socket in a new temp dir: `onRequest` gets the connection once
 * a request has arrived, and `requests` lists each request's first line.
 */
async function useListener(
  t: Scope,
  onRequest: (sock: Socket) => void,
): Promise<{ dir: string; socket: string; requests: string[] }> {
  const dir = useTmpDir(t, 'listener');
  const socket = join(dir, 'ferryd.sock');
  const requests: string[] = [];
  const server = createServer((sock) => {
    sock.once('data', (req) => {
      requests.push(req.toString('latin1').split('\r\n')[0] ?? '');
      onRequest(sock);
    });
  });
  await listen(t, server, socket);
  return { dir, socket, requests };
}

test('a ferryd whose answers come chunked and in pieces: ADD → CHECK → DEL work as with plain answers', async (t) => {
  const { node, ferryd } = await useNode(t);
  const pod = await useNetns(t, 'pod');
  const proxy = await useFerrydProxy(t, ferryd.socket, { chunked: true });
  const conf = { ...netConf(ferryd), daemonSocket: proxy.socket };
  const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf };
  const add = await runShim(node, 'ADD', call);
  expect(add.exitCode, add.stdout).toBe(0);
  expect(add.json).toMatchObject({ interfaces: [{}, { name: 'eth0', sandbox: pod.path }] });
  const check = await runShim(node, 'CHECK', { ...call, conf: { ...conf, prevResult: add.json } });
  expect(check.exitCode, check.stdout).toBe(0);
  expect((await runShim(node, 'DEL', call)).exitCode).toBe(0);
  expect(await linkNames(node)).toEqual(['lo']);
  expect(await ferryd.assignedAddresses()).toEqual([]);
  // ADD commits through the journal: three answers, every one chunked.
  expect(proxy.exchanges.map((e) => `${e.method} ${e.path} ${e.chunked ? 'chunked' : 'not chunked'}`)).toEqual([
    'POST /v1/allocations chunked',
    `GET /v1/endpoints/${call.containerId} chunked`,
    `DELETE /v1/endpoints/${call.containerId} chunked`,
  ]);
});

test.for([
  [
    'hangs up after reading the request',
    (sock: Socket) => sock.end(),
    'bad answer: the connection closed before the end of the headers',
  ],
  [
    'sends half an answer and hangs up',
    (sock: Socket) =>
      sock.end('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"netw'),
    'bad answer: the connection closed after 6 of 100 body bytes',
  ],
  ['reads the request and never answers', () => undefined, 'no answer within 400 ms'],
  [
    'answers without end',
    (sock: Socket) => {
      // The shim hangs up at the cap, in the middle of this write.
      sock.on('error', () => undefined);
      sock.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 99999999\r\n\r\n');
      sock.end(Buffer.alloc(5 * 1024 * 1024, 'x'));
    },
    'bad answer: the answer is larger than 4194304 bytes',
  ],
] as const)('a listener that %s: CHECK fails with 11 saying why', async ([, onRequest, why], t) => {
  const node = await useNodeNetns(t);
  const pod = await useNetns(t, 'pod');
  const { dir, socket, requests } = await useListener(t, onRequest);
  const containerId = newContainerId();
  // The short deadline only where it is the point: under load, reading 4 MiB up to the cap took longer
  // than 400 ms, and the deadline answered first.
  const requestMs = why.startsWith('no answer') ? 400 : 10_000;
  const conf = netConf({ socket, dir }, { prevResult: { cniVersion: '1.1.0' }, daemonTimeouts: { requestMs } });
  const check = await runShim(node, 'CHECK', { containerId, ifName: 'eth0', netns: pod, conf });
  expect(check.exitCode).toBe(1);
  expect(check.json).toEqual({ cniVersion: '1.1.0', code: 11, msg: `ferryd at ${socket} is unreachable: ${why}` });
  expect(requests).toEqual([`GET /v1/endpoints/${containerId} HTTP/1.1`]);
});

test('ferryd hangs up on the allocation: ADD takes its early pair down, waits its bounded time, fails with 11', async (t) => {
  const node = await useNodeNetns(t);
  const pod = await useNetns(t, 'pod');
  const { dir, socket, requests } = await useListener(t, (sock) => sock.end());
  const conf = netConf({ socket, dir }, { daemonTimeouts: { addWaitMs: 300 } });
  const add = await runShim(node, 'ADD', { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf });
  expect(add.exitCode).toBe(1);
  expect(add.json).toMatchObject({
    code: 11,
    msg: expect.stringMatching(/is not ready after 300 ms: .* is unreachable: bad answer: the connection closed/),
  });
  expect(requests[0]).toBe('POST /v1/allocations HTTP/1.1');
  expect(requests.length).toBeGreaterThan(1);
  expect(requests.slice(1).every((line) => line === 'GET /readyz HTTP/1.1')).toBe(true);
  expect(await linkNames(pod)).toEqual(['lo']);
  expect(await linkNames(node)).toEqual(['lo']);
});

/**
 * A listener in a process stopped with SIGSTOP (a frozen ferryd) whose accept backlog this test then
 * fills: a further connect(2) finds no room until the listener accepts, which it never does.
 */
async function useFullListener(t: Scope, socket: string): Promise<void> {
  const listener = spawn(
    process.execPath,
    [
      '-e',
      `require('node:net').createServer().listen({ path: ${JSON.stringify(socket)}, backlog: 1 }, () => process.stdout.write('ready'))`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  trackChild(t, listener, 'ferry full listener');
  await new Promise<void>((resolve, reject) => {
    listener.stdout?.once('data', () => resolve());
    listener.once('exit', (code) => reject(new Error(`the listener exited with ${code}`)));
  });
  listener.kill('SIGSTOP');
  const held: Socket[] = [];
  t.onTestFinished(() => {
    for (const s of held) s.destroy();
  });
  for (;;) {
    const s = createConnection(socket);
    const refused = await new Promise<string | undefined>((resolve) => {
      s.once('connect', () => resolve(undefined));
      s.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    });
    if (refused === 'EAGAIN') return;
    if (refused !== undefined) throw new Error(`filling the backlog: ${refused}`);
    held.push(s);
    if (held.length > 64) throw new Error('the backlog never filled');
  }
}

test('a listener whose backlog is full: connect waits connectMs, then code 11 saying so', async (t) => {
  const node = await useNodeNetns(t);
  const pod = await useNetns(t, 'pod');
  const dir = useTmpDir(t, 'backlog');
  const socket = join(dir, 'ferryd.sock');
  await useFullListener(t, socket);
  const conf = netConf(
    { socket, dir },
    { prevResult: { cniVersion: '1.1.0' }, daemonTimeouts: { connectMs: 300, requestMs: 5000 } },
  );
  const check = await runShim(node, 'CHECK', { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf });
  expect(check.json).toEqual({
    cniVersion: '1.1.0',
    code: 11,
    msg: `ferryd at ${socket} is unreachable: connect timed out after 300 ms`,
  });
});
