/**
 * `ferryctl install`, the DaemonSet's init step, on files in the test's temp dir: the CNI files go in
 * atomically after the conflist is checked, ferryd's config is rendered with the node's pod CIDRs (from
 * a stand-in API server) and validated, and nothing is written when any input is bad.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, type TestContext, test } from 'vitest';
import { printed, runCtl, tempDir } from '../testing/ferryd';
import { nodeWith, useNodeApi } from '../testing/node-api';

const CONFLIST = {
  cniVersion: '1.0.0',
  name: 'ferry',
  plugins: [
    { type: 'ferry-cni', daemonSocket: '/run/ferry/ferryd.sock' },
    { type: 'portmap', capabilities: { portMappings: true } },
  ],
};

const TEMPLATE = `socket: /run/ferry/ferryd.sock
database: /var/lib/ferry/ferry.db
deleteQueue: /var/lib/ferry/delete-queue
networks:
  - name: ferry
    ipv4:
      subnet: "{{POD_CIDR_V4}}"
`;

/** The inputs in `in/`, the node's directories under `node/`. */
function useNode(t: TestContext, conflist: unknown = CONFLIST, template = TEMPLATE) {
  const dir = tempDir(t);
  const input = join(dir, 'in');
  mkdirSync(input);
  const put = (name: string, text: string) => {
    writeFileSync(join(input, name), text);
    return join(input, name);
  };
  const paths = {
    shim: put('ferry-cni', '#!/bin/sh\n# the shim\n'),
    conflist: put('10-ferry.conflist', typeof conflist === 'string' ? conflist : JSON.stringify(conflist)),
    template: put('ferryd.yaml.tmpl', template),
    token: put('token', 'sa-token\n'),
    binDir: join(dir, 'node/opt/cni/bin'),
    confDir: join(dir, 'node/etc/cni/net.d'),
    config: join(dir, 'node/etc/ferry/ferryd.yaml'),
  };
  const cniFlags = [
    '--shim',
    paths.shim,
    '--cni-bin-dir',
    paths.binDir,
    '--conflist',
    paths.conflist,
    '--cni-conf-dir',
    paths.confDir,
  ];
  const configFlags = ['--ferryd-config-template', paths.template, '--ferryd-config-out', paths.config];
  const written = () =>
    existsSync(join(dir, 'node')) ? readdirSync(join(dir, 'node'), { recursive: true }).sort() : [];
  return { paths, cniFlags, configFlags, written };
}

const modeOf = (path: string) => statSync(path).mode & 0o777;

test('install: ferry-cni and the conflist go in, executable and readable', async (t) => {
  const n = useNode(t);
  const r = await runCtl(['install', ...n.cniFlags]);
  expect(r).toEqual(printed(`installed ${n.paths.binDir}/ferry-cni`, `installed ${n.paths.confDir}/10-ferry.conflist`));
  expect(readFileSync(join(n.paths.binDir, 'ferry-cni'), 'utf8')).toBe(readFileSync(n.paths.shim, 'utf8'));
  expect(modeOf(join(n.paths.binDir, 'ferry-cni'))).toBe(0o755);
  expect(JSON.parse(readFileSync(join(n.paths.confDir, '10-ferry.conflist'), 'utf8'))).toEqual(CONFLIST);
  expect(modeOf(join(n.paths.confDir, '10-ferry.conflist'))).toBe(0o644);
  // Again: replaced in place, nothing else left behind (no temp files).
  expect((await runCtl(['install', ...n.cniFlags])).code).toBe(0);
  expect(readdirSync(n.paths.binDir)).toEqual(['ferry-cni']);
  expect(readdirSync(n.paths.confDir)).toEqual(['10-ferry.conflist']);
});

test('install --plugins-dir: the plugins the node lacks go in from the image, its own stay; a plugin on neither side is refused', async (t) => {
  const n = useNode(t);
  const image = join(tempDir(t), 'usr/lib/cni');
  mkdirSync(image, { recursive: true });
  for (const p of ['portmap', 'loopback', 'bridge']) writeFileSync(join(image, p), `#!/bin/sh\n# image's ${p}\n`);
  // The node has its own loopback: kept. It lacks portmap (the conflist chains it): copied, executable.
  mkdirSync(n.paths.binDir, { recursive: true });
  writeFileSync(join(n.paths.binDir, 'loopback'), "#!/bin/sh\n# the node's loopback\n");
  const r = await runCtl(['install', ...n.cniFlags, '--plugins-dir', image]);
  expect(r).toEqual(
    printed(
      `installed ${n.paths.binDir}/portmap (the node had none)`,
      `installed ${n.paths.binDir}/ferry-cni`,
      `installed ${n.paths.confDir}/10-ferry.conflist`,
    ),
  );
  expect(readdirSync(n.paths.binDir).sort()).toEqual(['ferry-cni', 'loopback', 'portmap']);
  expect(readFileSync(join(n.paths.binDir, 'loopback'), 'utf8')).toContain("the node's loopback");
  expect(readFileSync(join(n.paths.binDir, 'portmap'), 'utf8')).toContain("image's portmap");
  expect(modeOf(join(n.paths.binDir, 'portmap'))).toBe(0o755);

  // A plugin neither has: refused, naming it and both places, and nothing is written.
  const tuning = useNode(t, { ...CONFLIST, plugins: [...CONFLIST.plugins, { type: 'tuning' }] });
  const refused = await runCtl(['install', ...tuning.cniFlags, '--plugins-dir', image]);
  expect(refused.code).toBe(1);
  expect(refused.err).toMatch(
    /conflist .*10-ferry\.conflist: plugin tuning is neither on the node \(.*opt\/cni\/bin\) nor in the image \(.*usr\/lib\/cni\); every ADD would fail/,
  );
  expect(tuning.written()).toEqual([]);
  // A type that is a path is no plugin name.
  const path = useNode(t, { ...CONFLIST, plugins: [...CONFLIST.plugins, { type: '../../bin/sh' }] });
  const bad = await runCtl(['install', ...path.cniFlags, '--plugins-dir', image]);
  expect([bad.code, bad.err]).toEqual([
    1,
    expect.stringMatching(/plugin type "\.\.\/\.\.\/bin\/sh" is not a file name/),
  ]);
  expect(path.written()).toEqual([]);
});

test('install --ready-file: ferry-cni goes in only once the ferryd writing the file serves the socket', async (t) => {
  const n = useNode(t);
  // A socket path whose inode the ready file names; any file has an inode.
  const socket = join(tempDir(t), 'ferryd.sock');
  writeFileSync(socket, '');
  const readyFile = join(tempDir(t), 'ready');
  const flags = [...n.cniFlags, '--socket', socket, '--ready-file', readyFile];
  // No ready file (this pod's ferryd has not taken over): nothing is installed, and it says why.
  const refused = await runCtl(['install', ...flags, '--wait-sec', '0']);
  expect(refused.code).toBe(3);
  expect(refused.err).toMatch(/install: ferry-cni left as it is: .*ready is absent: this pod's ferryd does not serve/);
  expect(n.written()).toEqual([]);
  // Another ferryd's socket at the path: still nothing.
  writeFileSync(readyFile, `${statSync(socket).ino + 1}\n`);
  expect((await runCtl(['install', ...flags, '--wait-sec', '0'])).err).toMatch(/served by another ferryd/);
  expect(n.written()).toEqual([]);
  // Waiting: the files go in once the ready file names the socket.
  const installing = runCtl(['install', ...flags, '--wait-sec', '10']);
  await new Promise((r) => setTimeout(r, 200));
  expect(n.written()).toEqual([]);
  writeFileSync(readyFile, `${statSync(socket).ino}\n`);
  expect((await installing).code).toBe(0);
  expect(readFileSync(join(n.paths.binDir, 'ferry-cni'), 'utf8')).toBe(readFileSync(n.paths.shim, 'utf8'));
  expect((await runCtl(['install', ...flags, '--wait-sec', 'soon'])).code).toBe(2);
});

test("install: ferryd's config rendered with the node's pod CIDR, and only readable by root", async (t) => {
  const n = useNode(t);
  const api = await useNodeApi(t, { 'node-a': nodeWith('10.244.7.0/24') });
  const access = ['--node', 'node-a', '--api-server', api.url, '--api-token-file', n.paths.token];
  const r = await runCtl(['install', ...n.configFlags, ...access]);
  expect(r).toEqual(printed(`rendered ${n.paths.config}`));
  expect(readFileSync(n.paths.config, 'utf8')).toBe(TEMPLATE.replace('{{POD_CIDR_V4}}', '10.244.7.0/24'));
  expect(modeOf(n.paths.config)).toBe(0o600);
  expect(api.requests).toEqual([{ path: '/api/v1/nodes/node-a', authorization: 'Bearer sa-token' }]);
  // Both steps in one run: everything is checked before the first file is written.
  const both = await runCtl(['install', ...n.cniFlags, ...n.configFlags, ...access]);
  expect(both.code).toBe(0);
  expect(both.out.trimEnd().split('\n')).toEqual([
    `installed ${n.paths.binDir}/ferry-cni`,
    `installed ${n.paths.confDir}/10-ferry.conflist`,
    `rendered ${n.paths.config}`,
  ]);
});

test('install: a template without placeholders needs no node and no API server', async (t) => {
  const n = useNode(t, CONFLIST, TEMPLATE.replace('"{{POD_CIDR_V4}}"', '10.244.9.0/24'));
  expect((await runCtl(['install', ...n.configFlags])).code).toBe(0);
  expect(readFileSync(n.paths.config, 'utf8')).toContain('subnet: 10.244.9.0/24');
});

test('install: a bad input writes nothing, not even the parts that were fine', async (t) => {
  const api = await useNodeApi(t, { 'v6-only': nodeWith('fd00:10:244:7::/64'), 'node-a': nodeWith('10.244.7.0/24') });
  const cases: [string, ReturnType<typeof useNode>, string[], RegExp][] = [];
  const notFerry = useNode(t, { ...CONFLIST, plugins: [{ type: 'bridge' }] });
  cases.push(['no ferry-cni in the conflist', notFerry, [], /conflist .*: no plugin of type ferry-cni/]);
  const badFerry = useNode(t, { ...CONFLIST, plugins: [{ type: 'ferry-cni', mtu: 'big' }] });
  cases.push(['a ferry-cni the shim would refuse', badFerry, [], /conflist .*: ferry-cni: mtu: /]);
  cases.push(['a conflist that is not JSON', useNode(t, '{"cniVersion":'), [], /^ferryctl: .*10-ferry\.conflist: /]);
  const v6 = useNode(t);
  cases.push([
    'no IPv4 pod CIDR for a template that names one',
    v6,
    ['--node', 'v6-only', '--api-server', api.url, '--api-token-file', v6.paths.token],
    /install: node v6-only has no IPv4 pod CIDR \(the template names \{\{POD_CIDR_V4\}\}\)/,
  ]);
  const invalid = useNode(t, CONFLIST, TEMPLATE.replace('networks:', 'cooldownSec: soon\nnetworks:'));
  cases.push([
    'a rendered config ferryd would refuse',
    invalid,
    ['--node', 'node-a', '--api-server', api.url, '--api-token-file', invalid.paths.token],
    /rendered ferryd config .*: cooldownSec: /,
  ]);
  for (const [why, n, extra, message] of cases) {
    const r = await runCtl(['install', ...n.cniFlags, ...n.configFlags, ...extra]);
    expect(r.code, why).toBe(1);
    expect(r.err, why).toMatch(message);
    expect(n.written(), why).toEqual([]);
  }
});

test('install: usage errors (2) for missing flags, and an unreadable input is an I/O error (1)', async (t) => {
  const n = useNode(t);
  const usage = async (args: string[], problem: RegExp) => {
    const r = await runCtl(['install', ...args]);
    expect(r.code, args.join(' ')).toBe(2);
    expect(r.err, args.join(' ')).toMatch(problem);
  };
  await usage([], /^ferryctl: install needs the CNI files .*, ferryd's config .*, or both/);
  await usage(
    n.cniFlags.slice(0, 6),
    /^ferryctl: install needs --shim, --cni-bin-dir, --conflist and --cni-conf-dir together/,
  );
  await usage(
    n.configFlags.slice(0, 2),
    /^ferryctl: install needs --ferryd-config-template and --ferryd-config-out together/,
  );
  await usage(n.configFlags, /^ferryctl: the ferryd config template names \{\{POD_CIDR_V4\/6\}\}: --node is needed/);
  const missing = await runCtl(['install', ...n.cniFlags.map((f) => (f === n.paths.shim ? `${f}.gone` : f))]);
  expect(missing).toEqual({ code: 1, out: '', err: `ferryctl: read the shim ${n.paths.shim}.gone: ENOENT\n` });
  expect(n.written()).toEqual([]);
});
