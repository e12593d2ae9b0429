/**
 * ferryctl's main(): usage, where it connects, and how ferryd's answers become exit codes (0 ok, 1 ferryd
 * reported a problem, 2 usage, 3 ferryd unreachable).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { ctl, runCtl, tempDir, useFerryd } from './testing/ferryd';

test('no command: the usage on stderr, exit 2; --help: the usage on stdout, exit 0', async () => {
  const none = await runCtl([]);
  expect(none).toMatchObject({ code: 2, out: '' });
  expect(none.err).toMatch(/^usage: ferryctl /);
  expect(none.err).toContain('exit codes: 0 ok, 1 ferryd reported a problem');
  const help = await runCtl(['--help']);
  expect(help).toMatchObject({ code: 0, err: '', out: none.err });
  expect((await runCtl(['-h', 'endpoints'])).out).toBe(none.err);
});

test('an unknown flag or command is a usage error (2) naming it, before anything is asked of ferryd', async () => {
  const flag = await runCtl(['--socket', '/nonexistent/ferryd.sock', 'endpoints', '--bogus']);
  expect(flag).toMatchObject({ code: 2, out: '' });
  expect(flag.err).toMatch(/^ferryctl: Unknown option '--bogus'/);
  expect(flag.err).toContain('usage: ferryctl');
  const command = await runCtl(['--socket', '/nonexistent/ferryd.sock', 'frobnicate']);
  expect(command).toMatchObject({ code: 2, out: '' });
  expect(command.err).toMatch(/^ferryctl: unknown command "frobnicate"\n\nusage: /);
  // A flag that takes a value, given none.
  expect((await runCtl(['endpoints', '--socket'])).code).toBe(2);
});

test('ferryd unreachable is exit 3, naming where ferryctl looked', async (t) => {
  const socket = join(tempDir(t), 'nobody.sock');
  const r = await runCtl(['--socket', socket, 'endpoints']);
  expect(r).toEqual({ code: 3, out: '', err: `ferryctl: ferryd is unreachable at socket ${socket}: ENOENT\n` });
  // A socket file nobody listens on.
  writeFileSync(socket, '');
  const refused = await runCtl(['--socket', socket, 'health']);
  expect(refused.code).toBe(3);
  expect(refused.err).toMatch(/^ferryctl: ferryd is unreachable at socket .*: ECONNREFUSED\n$/);
});

test('the socket comes from --socket, else FERRY_SOCKET', async (t) => {
  const h = await useFerryd(t);
  const viaEnv = await runCtl(['health'], { FERRY_SOCKET: h.config.socket });
  expect(viaEnv).toEqual({ code: 0, out: 'alive\n', err: '' });
  const flagWins = await runCtl(['--socket', h.config.socket, 'health'], { FERRY_SOCKET: '/nonexistent/ferryd.sock' });
  expect(flagWins.code).toBe(0);
});

test("a CNI error from ferryd is exit 1 with ferryd's message on stderr", async (t) => {
  const h = await useFerryd(t);
  const r = await ctl(h, 'endpoints', 'show', 'nope');
  expect(r).toEqual({ code: 1, out: '', err: 'ferryctl: endpoint nope: not found\n' });
});

test('the TCP listener takes the token from --token-file; a wrong one is 1, an unreadable file usage (2)', async (t) => {
  const tokens = { read: 'r'.repeat(32), admin: 'a'.repeat(32) };
  // The TCP surface serves operators only: the test reads and deletes what is not there.
  const h = await useFerryd(t, {}, { surface: 'tcp', tokens });
  const dir = tempDir(t);
  const token = (name: string, text: string) => {
    writeFileSync(join(dir, name), text);
    return join(dir, name);
  };
  const url = h.url ?? '';
  const read = token('read', `${tokens.read}\n`);
  const listed = await runCtl(['--url', url, '--token-file', read, 'endpoints']);
  expect(listed).toEqual({ code: 0, out: 'CONTAINER  POD  IFNAME  NIC  ADDRESSES  STATE  NETWORK\n', err: '' });
  // The read token may not change anything.
  const forbidden = await runCtl(['--url', url, '--token-file', read, 'endpoints', 'delete', 'c1']);
  expect(forbidden).toEqual({ code: 1, out: '', err: 'ferryctl: operator API: DELETE needs the admin token\n' });
  const wrong = await runCtl(['--url', url, '--token-file', token('wrong', 'x'.repeat(32)), 'endpoints']);
  expect(wrong).toEqual({ code: 1, out: '', err: 'ferryctl: operator API: missing or wrong bearer token\n' });
  const admin = await runCtl(['--url', url, '--token-file', token('admin', tokens.admin), 'endpoints', 'delete', 'c1']);
  expect(admin.code).toBe(0);
  const missing = await runCtl(['--url', url, '--token-file', join(dir, 'nope'), 'endpoints']);
  expect(missing.code).toBe(2);
  expect(missing.err).toMatch(new RegExp(`^ferryctl: read token file ${join(dir, 'nope')}: ENOENT`));
});
