/**
 * main() in-process through the Node runtime: the paths that need no namespace (VERSION, about, env
 * and config validation), checked for exactly one JSON document and the right code.
 */
import { expect, test } from 'vitest';
import { type Io, main } from './main';
import { nodeRuntime } from './runtime/node';

async function run(env: Record<string, string>, stdin?: string) {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = { stdin, print: (s) => out.push(s), printErr: (s) => err.push(s) };
  const code = await main({ CNI_PATH: '/opt/cni/bin', ...env }, io, nodeRuntime);
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

test('DEL against a socket that does not exist is code 11, never a hang', async () => {
  const r = await run(
    { CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'abc', CNI_IFNAME: 'eth0' },
    conf({ daemonSocket: '/nonexistent/ferryd.sock' }),
  );
  expect(r.json).toMatchObject({ code: 11, msg: expect.stringContaining('/nonexistent/ferryd.sock is unreachable') });
});
