/**
 * main() in-process against a stand-in ferryd on a unix socket whose storage fails: ferryd's
 * StorageFailure reaches the runtime as code 11 with ferryd's message; a DEL that ferryd cannot store is
 * queued, and when the queue cannot be written either, it is 11 naming both. (test/e2e/storage-full.test.ts
 * does the same with the real ferryd on a full tmpfs.)
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Code } from '@ferry/shared-types/errors';
import { expect, onTestFinished, test } from 'vitest';
import { type Io, main } from './main';
import { nodeRuntime } from './runtime/node';

const DB_FULL =
  'ferryd cannot write its database /var/lib/ferry/ferry.db: no space left on the filesystem (SQLITE_FULL)';

/** A ferryd that reads fine but cannot write: what ferryd answers on a full disk. */
async function useFullFerryd(dir: string): Promise<{ socket: string; asked: string[] }> {
  const socket = join(dir, 'ferryd.sock');
  const asked: string[] = [];
  const server = createServer((req, res) => {
    asked.push(`${req.method} ${req.url?.split('?')[0]}`);
    const answer = (status: number, body: object) => {
      res.writeHead(status, { 'content-type': 'application/json', 'ferry-api': '1' }).end(JSON.stringify(body));
    };
    const path = req.url?.split('?')[0] ?? '';
    if (path === '/readyz') return answer(503, { ready: false, phase: 'ready', reason: `storage failing: ${DB_FULL}` });
    if (req.method === 'POST' && path === '/v1/allocations')
      return answer(503, { code: Code.StorageFailure, msg: `allocate: ${DB_FULL}`, details: 'transient' });
    if (req.method === 'GET' && path.startsWith('/v1/endpoints/'))
      return answer(404, { code: Code.EndpointNotFound, msg: 'endpoint not found' });
    if (req.method === 'DELETE' && path.startsWith('/v1/endpoints/'))
      return answer(503, { code: Code.StorageFailure, msg: `release: ${DB_FULL}`, details: 'transient' });
    return answer(404, { code: Code.NotFound, msg: `route ${req.method} ${path} not found` });
  });
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { socket, asked };
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-t-storage-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function run(env: Record<string, string>, conf: object) {
  const out: string[] = [];
  const io: Io = { readStdin: async () => JSON.stringify(conf), print: (s) => out.push(s), printErr: () => undefined };
  const code = await main({ CNI_PATH: '/opt/cni/bin', ...env }, io, nodeRuntime, { defaultLogFile: '/dev/null' });
  return { code, json: out[0] ? JSON.parse(out[0]) : undefined };
}

const conf = (daemonSocket: string, deleteQueue: string) => ({
  cniVersion: '1.1.0',
  name: 'ferry',
  type: 'ferry-cni',
  logFile: '/dev/null',
  daemonSocket,
  deleteQueue,
  daemonTimeouts: { addWaitMs: 5000, delWaitMs: 5000 },
});

test("ADD: ferryd's storage failure is code 11 with ferryd's message, at once (no wait for readiness)", async () => {
  const dir = tempDir();
  const { socket, asked } = await useFullFerryd(dir);
  // Any path that is not the node's own namespace passes the netns check; allocate fails before it is used.
  const netns = join(dir, 'netns');
  writeFileSync(netns, '');
  const r = await run(
    { CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'abc', CNI_IFNAME: 'eth0', CNI_NETNS: netns },
    conf(socket, join(dir, 'q')),
  );
  expect(r.code).toBe(1);
  expect(r.json).toEqual({
    cniVersion: '1.1.0',
    code: Code.TryAgainLater,
    msg: `allocate: ${DB_FULL}`,
    details: 'transient',
  });
  // Not "ferryd is starting": the shim does not wait for a readiness that only space brings back.
  expect(asked).toEqual(['POST /v1/allocations']);
});

test('DEL that ferryd cannot store is queued and exits 0', async () => {
  const dir = tempDir();
  const { socket } = await useFullFerryd(dir);
  const queue = join(dir, 'q');
  const r = await run({ CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'abc', CNI_IFNAME: 'eth0' }, conf(socket, queue));
  expect(r).toEqual({ code: 0, json: undefined });
  expect(readdirSync(queue).filter((f) => f.endsWith('.json'))).toHaveLength(1);
});

test('DEL that neither ferryd nor the queue can store is code 11 naming both', async () => {
  const dir = tempDir();
  const { socket } = await useFullFerryd(dir);
  writeFileSync(join(dir, 'file'), '');
  const queue = join(dir, 'file', 'q');
  const r = await run({ CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'abc', CNI_IFNAME: 'eth0' }, conf(socket, queue));
  expect(r.code).toBe(1);
  expect(r.json).toMatchObject({
    code: Code.TryAgainLater,
    msg: `release: ${DB_FULL}; and the DEL could not be queued either: create the delete queue ${queue}: ENOTDIR`,
  });
});
