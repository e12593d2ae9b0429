/**
 * main() in-process through the Node runtime: the paths that need no namespace (VERSION, about, env
 * and config validation), checked for exactly one JSON document and the right code.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QueueEntrySchema } from '@ferry/shared-types/api/queue';
import { expect, onTestFinished, test } from 'vitest';
import { type Io, main } from './main';
import { nodeRuntime } from './runtime/node';

async function run(env: Record<string, string>, stdin?: string) {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = { readStdin: async () => stdin, print: (s) => out.push(s), printErr: (s) => err.push(s) };
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

test("the config's log rotation applies from the first line, even one written before the config is validated", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-t-log-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const logFile = join(dir, 'cni.log');
  const missingEnv = { CNI_COMMAND: 'DEL' };
  writeFileSync(logFile, `${'x'.repeat(2048)}\n`);
  // 0: never rotated, however large.
  expect((await run(missingEnv, conf({ logFile, logMaxSizeKiB: 0 }))).json).toMatchObject({ code: 4 });
  expect(readdirSync(dir)).toEqual(['cni.log']);
  expect((await run(missingEnv, conf({ logFile, logMaxSizeKiB: 1, logMaxBackups: 1 }))).json).toMatchObject({
    code: 4,
  });
  // Moved aside after its line; the next line starts a fresh cni.log.
  expect(readdirSync(dir)).toEqual([expect.stringMatching(/^cni\.log\.\d{8}T\d{6}\.\d{3}Z-\d+$/)]);
  // A value the schema refuses is reported (code 7) and the default applies meanwhile.
  const bad = await run(
    { CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'abc', CNI_IFNAME: 'eth0' },
    conf({ logFile, logMaxSizeKiB: 'big' }),
  );
  expect(bad.json).toMatchObject({ code: 7, msg: expect.stringMatching(/^invalid network config: logMaxSizeKiB: /) });
});

test('DEL with ferryd unreachable queues the intent durably and exits 0', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-t-queue-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const r = await run(
    { CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'abc', CNI_IFNAME: 'eth0', CNI_ARGS: 'IgnoreUnknown=1;K8S_POD_NAME=web-0' },
    conf({ daemonSocket: '/nonexistent/ferryd.sock', deleteQueue: dir, daemonTimeouts: { delWaitMs: 300 } }),
  );
  expect(r.code).toBe(0);
  expect(r.out).toEqual([]);
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

test('VERSION answers whatever stdin holds, in a version Ferry speaks', async () => {
  expect((await run({ CNI_COMMAND: 'VERSION' }, 'not json')).json.cniVersion).toBe('1.1.0');
  expect((await run({ CNI_COMMAND: 'VERSION' }, '{}')).json.cniVersion).toBe('1.1.0');
  expect((await run({ CNI_COMMAND: 'VERSION' }, '{"cniVersion":"9.9.9"}')).json.cniVersion).toBe('1.1.0');
});

test('stdin that cannot be read is code 5, printed as one JSON document', async () => {
  const out: string[] = [];
  const io: Io = {
    readStdin: async () => {
      throw Object.assign(new Error('EIO: i/o error, read'), { code: 'EIO' });
    },
    print: (s) => out.push(s),
    printErr: () => undefined,
  };
  const env = { CNI_PATH: '/opt/cni/bin', CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'abc', CNI_IFNAME: 'eth0' };
  expect(await main(env, io, nodeRuntime, { defaultLogFile: '/dev/null' })).toBe(1);
  expect(out).toHaveLength(1);
  expect(JSON.parse(out[0] as string)).toMatchObject({ code: 5, msg: expect.stringContaining('EIO') });
});

test('GC without any attachments list is refused instead of releasing the whole network', async () => {
  const r = await run({ CNI_COMMAND: 'GC' }, conf({ daemonSocket: '/nonexistent/ferryd.sock' }));
  expect(r.json).toMatchObject({ code: 7, msg: expect.stringContaining('GC needs cni.dev/valid-attachments') });
});

test('a malformed prevResult fails ADD before anything is asked of ferryd', async () => {
  const r = await run(
    {
      CNI_COMMAND: 'ADD',
      CNI_CONTAINERID: 'abc',
      CNI_IFNAME: 'eth0',
      CNI_NETNS: '/proc/self/ns/net',
      CNI_NETNS_OVERRIDE: '1',
    },
    // A socket that does not exist: reaching ferryd would end in code 11 after the ADD wait, not 7.
    conf({ daemonSocket: '/nonexistent/ferryd.sock', prevResult: { interfaces: [{ mac: 'x' }] } }),
  );
  expect(r.json).toMatchObject({ code: 7, msg: expect.stringContaining('prevResult') });
});

test('DEL goes through with an ipam block; the queue entry leaves out what ferryd would refuse', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-t-queue-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const r = await run(
    {
      CNI_COMMAND: 'DEL',
      CNI_CONTAINERID: 'abc',
      CNI_IFNAME: 'eth0',
      CNI_ARGS: `K8S_POD_NAMESPACE=default;K8S_POD_NAME=${'x'.repeat(300)}`,
    },
    conf({
      ipam: { type: 'host-local' },
      prevResult: { cniVersion: '1.1.0', interfaces: [{ name: 'eth0' }], pad: 'y'.repeat(100_000) },
      daemonSocket: '/nonexistent/ferryd.sock',
      deleteQueue: dir,
      daemonTimeouts: { delWaitMs: 50 },
    }),
  );
  expect(r.code, r.out.join('')).toBe(0);
  const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
  const entry = JSON.parse(readFileSync(join(dir, files[0] as string), 'utf8'));
  // A prevResult over the size limit and a pod name too long for ferryd are both left out.
  expect(QueueEntrySchema.parse(entry)).toEqual({
    version: 1,
    network: 'ferry',
    containerId: 'abc',
    ifName: 'eth0',
    netns: '',
    queuedAt: expect.any(String),
  });
  // A prevResult that fits is kept, for the record.
  const small = await run(
    { CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'abc', CNI_IFNAME: 'eth0' },
    conf({
      prevResult: { cniVersion: '1.1.0', interfaces: [{ name: 'eth0' }] },
      daemonSocket: '/nonexistent/ferryd.sock',
      deleteQueue: dir,
      daemonTimeouts: { delWaitMs: 50 },
    }),
  );
  expect(small.code).toBe(0);
  expect(JSON.parse(readFileSync(join(dir, files[0] as string), 'utf8')).prevResult).toEqual({
    cniVersion: '1.1.0',
    interfaces: [{ name: 'eth0' }],
  });
});

test('a delete queue that cannot be written is code 5 and still says why ferryd was needed', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-t-queue-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'file'), '');
  const r = await run(
    { CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'abc', CNI_IFNAME: 'eth0' },
    conf({
      daemonSocket: '/nonexistent/ferryd.sock',
      deleteQueue: join(dir, 'file', 'q'),
      daemonTimeouts: { delWaitMs: 50 },
    }),
  );
  expect(r.json).toMatchObject({
    code: 5,
    msg: expect.stringContaining('create the delete queue'),
    details: expect.stringContaining('ferryd was unreachable'),
  });
});
