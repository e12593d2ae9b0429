import { mkdtempSync, renameSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, onTestFinished, test } from 'vitest';
import { nodeRuntime } from './node';
import { UnreachableError } from './runtime';

function useDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-t-rt-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const ask = (socket: string, deadlineMs = 2000) =>
  nodeRuntime
    .request({ socket, method: 'GET', path: '/readyz', connectMs: 1000, deadlineMs })
    .answer()
    .catch((e: unknown) => e);

test('no socket file: unreachable because absent', async () => {
  const err = await ask(join(useDir(), 'ferryd.sock'));
  expect(err).toBeInstanceOf(UnreachableError);
  expect(err).toMatchObject({ reason: 'absent', message: expect.stringContaining('ENOENT') });
});

test('a socket file nobody listens on (what a killed ferryd leaves): unreachable because refused', async () => {
  const dir = useDir();
  const server = createServer();
  await new Promise<void>((r) => server.listen(join(dir, 'live.sock'), r));
  // Moved away first, so closing the server cannot remove it: the file stays, the listener goes.
  renameSync(join(dir, 'live.sock'), join(dir, 'ferryd.sock'));
  await new Promise((r) => server.close(r));
  const err = await ask(join(dir, 'ferryd.sock'));
  expect(err).toMatchObject({ reason: 'refused', message: expect.stringContaining('ECONNREFUSED') });
});

test('a listener that accepts but never answers: unreachable because of the timeout', async () => {
  const dir = useDir();
  const server = createServer(() => undefined);
  await new Promise<void>((r) => server.listen(join(dir, 'ferryd.sock'), r));
  onTestFinished(() => {
    server.close();
  });
  const err = await ask(join(dir, 'ferryd.sock'), 200);
  expect(err).toMatchObject({ reason: 'timeout', message: expect.stringContaining('no answer within 200 ms') });
});
