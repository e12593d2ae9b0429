import { expect, test } from 'vitest';
import { nodeRunner, nodeSpawner } from './node-runner';

test('a run gives the exit code and both streams as written, with its input on stdin', async () => {
  const r = await nodeRunner(['sh', '-c', 'read line; printf "%s\\n" "got $line"; printf oops >&2; exit 3'], 'ip -j\n');
  expect(r).toEqual({ exitCode: 3, stdout: 'got ip -j\n', stderr: 'oops' });
});

test('a command that cannot start exits 127, naming itself and why', async () => {
  const r = await nodeRunner(['/nonexistent/ip', 'link']);
  expect(r.exitCode).toBe(127);
  expect(r.stderr).toMatch(/^\/nonexistent\/ip: spawn \/nonexistent\/ip ENOENT$/);
});

test('a child that exits without reading a large input is a plain exit, not a failure of the run', async () => {
  const r = await nodeRunner(['true'], 'x'.repeat(4 * 1024 * 1024));
  expect(r).toEqual({ exitCode: 0, stdout: '', stderr: '' });
});

test('a child ended by a signal exits 1', async () => {
  expect((await nodeRunner(['sh', '-c', 'kill -TERM $$'])).exitCode).toBe(1);
});

test('a spawned child: its lines as they come, then how it ended with its stderr', async () => {
  const lines: string[] = [];
  const child = nodeSpawner(['sh', '-c', 'echo one; echo two; echo bad >&2; exit 4'], (l) => lines.push(l));
  expect(child.pid).toBeGreaterThan(0);
  expect(await child.exited).toEqual({ exitCode: 4, signal: null, stderr: 'bad' });
  expect(lines).toEqual(['one', 'two']);
});

test('kill() ends a spawned child with SIGTERM', async () => {
  const child = nodeSpawner(['sleep', '60'], () => undefined);
  child.kill();
  expect(await child.exited).toMatchObject({ exitCode: null, signal: 'SIGTERM' });
});

test('a run without input gives the child no stdin pipe, so nothing is written that can fail', async () => {
  // /dev/null: reading it ends at once.
  expect(await nodeRunner(['sh', '-c', 'cat; echo done'])).toEqual({ exitCode: 0, stdout: 'done\n', stderr: '' });
});
