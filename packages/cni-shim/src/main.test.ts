/**
 * main() in-process through the Node runtime: the paths that need no namespace (VERSION, about, env
 * and config validation), checked for exactly one JSON document and the right code.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QueueEntrySchema } from '@ferry/shared-types/api/queue';
import { expect, onTestFinished, test } from 'vitest';
import { type Io, main } from './main';
import { nodeRuntime } from './runtime/node';

async function run(env: Record<string, string>, stdin?: string) {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = { stdin, print: (s) => out.push(s), printErr: (s) => err.push(s) };
  const code = await main({ CNI_PATH: '/opt/cni/bin', ...env }, io, nodeRuntime, { defaultLogFile: '/dev/null' });
  return { code, out, err, json: out[0] ? JSON.parse(out[0]) : undefined };
}

const conf = (extra: object = {}) =>
  JSON.stringify({ cniVersion: '1.1.0', name: 'ferry', type: 'ferry-cni', logFile: '/dev/null', ...extra });

test('VERSION echoes the config version, or 1.1.0 without stdin', async () => {
  expect((await run({ CNI_COMMAND: 'VERSION' }, '{"cniVersion":"0.3.1"}')).json).toEqual({
    cniVersion: '0.3.1',
    supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'],
  });
  expect((await run({ CNI_COMMAND: 'VERSION' })).json.cniVersion).toBe('1.1.0');
});

test("VERSION ignores the other variables, as libcni's config validation sends CNI_NETNS=dummy", async () => {
  const r = await run(
    { CNI_COMMAND: 'VERSION', CNI_NETNS: 'dummy', CNI_CONTAINERID: 'dummy', CNI_IFNAME: 'dummy' },
    '{"cniVersion":"1.0.0"}',
  );
  expect(r.code).toBe(0);
  expect(r.json.cniVersion).toBe('1.0.0');
});

test('no CNI_COMMAND: about text on stderr, nothing on stdout, exit 0', async () => {
  const r = await run({});
  expect(r.code).toBe(0);
  expect(r.out).toEqual([]);
  expect(r.err.join('')).toMatch(/^ferry-cni: /);
});

test('missing variables are named together, with code 4 and the config version', async () => {
  const r = await run({ CNI_COMMAND: 'DEL' }, conf({ cniVersion: '0.4.0' }));
  expect(r.code).toBe(1);
  expect(r.out).toHaveLength(1);
  expect(r.json).toEqual({
    cniVersion: '0.4.0',
    code: 4,
    msg: 'required env variables [CNI_CONTAINERID,CNI_IFNAME] missing',
  });
});

test('config errors come after env errors and carry the declared version', async () => {
  const r = await run(
    { CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'abc', CNI_IFNAME: 'eth0' },
    conf({ cniVersion: '0.4.0', mtu: 'big' }),
  );
  expect(r.json).toMatchObject({
    cniVersion: '0.4.0',
    code: 7,
    msg: expect.stringMatching(/^invalid network config: mtu: /),
  });
});

test('DEL with ferryd unreachable queues the intent durably and exits 0 within its budget', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-t-queue-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const started = Date.now();
  const r = await run(
    { CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'abc', CNI_IFNAME: 'eth0', CNI_ARGS: 'IgnoreUnknown=1;K8S_POD_NAME=web-0' },
    conf({ daemonSocket: '/nonexistent/ferryd.sock', deleteQueue: dir, daemonTimeouts: { delWaitMs: 300 } }),
  );
  expect(r.code).toBe(0);
  expect(r.out).toEqual([]);
  expect(Date.now() - started).toBeLessThan(5000);
  const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
  expect(files).toHaveLength(1);
  const entry = QueueEntrySchema.parse(JSON.parse(readFileSync(join(dir, files[0] as string), 'utf8')));
  expect(entry).toMatchObject({
    network: 'ferry',
    containerId: 'abc',
    ifName: 'eth0',
    netns: '',
    pod: { name: 'web-0' },
  });
  // A second DEL collapses onto the same entry.
  await run(
    { CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'abc', CNI_IFNAME: 'eth0' },
    conf({ daemonSocket: '/nonexistent/ferryd.sock', deleteQueue: dir, daemonTimeouts: { delWaitMs: 100 } }),
  );
  expect(readdirSync(dir).filter((f) => f.endsWith('.json'))).toEqual(files);
});

test('a full delete queue makes DEL fail with 110 so the runtime retries', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-t-queue-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const del = (id: string) =>
    run(
      { CNI_COMMAND: 'DEL', CNI_CONTAINERID: id, CNI_IFNAME: 'eth0' },
      conf({
        daemonSocket: '/nonexistent/ferryd.sock',
        deleteQueue: dir,
        deleteQueueLimit: 2,
        daemonTimeouts: { delWaitMs: 50 },
      }),
    );
  expect((await del('a')).code).toBe(0);
  expect((await del('b')).code).toBe(0);
  const third = await del('c');
  expect(third.json).toMatchObject({ code: 110, msg: expect.stringContaining('is full (2 entries)') });
  expect((await del('a')).code).toBe(0);
});
