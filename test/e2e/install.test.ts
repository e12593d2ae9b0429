/**
 * `ferryctl install`, the DaemonSet's init step, into temp dirs: ferry-cni and the conflist land
 * atomically (no temp file is ever left, a second run changes nothing), and ferryd's config is rendered
 * with the node's pod CIDRs from a stand-in for the Kubernetes API on loopback.
 */

import { chmodSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { execa } from 'execa';
import { expect, test } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { DIST_BIN, ROOT } from '../fixtures/paths';
import { useTmpDir } from '../fixtures/tmp';

const ferryctl = (...args: string[]) => execa(`${DIST_BIN}/ferryctl`, args, { reject: false, timeout: 30_000 });

function configMapFiles(dir: string): { conflist: string; template: string } {
  const cm = parseYaml(readFileSync(join(ROOT, 'deploy', 'configmap.yaml'), 'utf8')) as {
    data: Record<string, string>;
  };
  const conflist = join(dir, '10-ferry.conflist');
  const template = join(dir, 'ferryd.yaml.tmpl');
  writeFileSync(conflist, cm.data['10-ferry.conflist'] ?? '');
  writeFileSync(template, cm.data['ferryd.yaml.tmpl'] ?? '');
  return { conflist, template };
}

test('installs ferry-cni and the conflist atomically and idempotently', async (t) => {
  const dir = useTmpDir(t, 'install');
  const { conflist } = configMapFiles(dir);
  const args = [
    'install',
    `--shim=${DIST_BIN}/ferry-cni`,
    `--cni-bin-dir=${dir}/bin`,
    `--conflist=${conflist}`,
    `--cni-conf-dir=${dir}/net.d`,
  ];
  for (const n of [1, 2]) {
    const r = await ferryctl(...args);
    expect(r.exitCode, `run ${n}: ${r.stderr}`).toBe(0);
    expect(readdirSync(join(dir, 'bin'))).toEqual(['ferry-cni']);
    expect(readdirSync(join(dir, 'net.d'))).toEqual(['10-ferry.conflist']);
  }
  expect(readFileSync(join(dir, 'bin', 'ferry-cni')).equals(readFileSync(`${DIST_BIN}/ferry-cni`))).toBe(true);
  expect(statSync(join(dir, 'bin', 'ferry-cni')).mode & 0o777).toBe(0o755);
  expect(readFileSync(join(dir, 'net.d', '10-ferry.conflist'), 'utf8')).toBe(readFileSync(conflist, 'utf8'));
  const v = await execa(join(dir, 'bin', 'ferry-cni'), [], {
    env: { CNI_COMMAND: 'VERSION' },
    input: '{"cniVersion":"1.0.0"}',
  });
  expect(JSON.parse(v.stdout).cniVersion).toBe('1.0.0');
});

test('refuses a conflist without a valid ferry-cni entry, and writes nothing', async (t) => {
  const dir = useTmpDir(t, 'install');
  const bad = join(dir, 'bad.conflist');
  writeFileSync(
    bad,
    JSON.stringify({ cniVersion: '1.1.0', name: 'ferry', plugins: [{ type: 'ferry-cni', daemonSocket: 'relative' }] }),
  );
  const r = await ferryctl(
    'install',
    `--shim=${DIST_BIN}/ferry-cni`,
    `--cni-bin-dir=${dir}/bin`,
    `--conflist=${bad}`,
    `--cni-conf-dir=${dir}/net.d`,
  );
  expect(r.exitCode).toBe(1);
  expect(r.stderr).toContain('conflist');
  expect(r.stderr).toContain('daemonSocket: must be an absolute path');
  expect(() => readdirSync(join(dir, 'net.d'))).toThrow();
  expect(() => readdirSync(join(dir, 'bin'))).toThrow();
});

test("renders ferryd's config with the node's pod CIDRs from the API", async (t) => {
  const dir = useTmpDir(t, 'install');
  const { conflist, template } = configMapFiles(dir);
  const token = join(dir, 'token');
  writeFileSync(token, 'test-token');
  chmodSync(token, 0o600);
  const seen: { url?: string; auth?: string }[] = [];
  const api = createServer((req, res) => {
    seen.push({ url: req.url, auth: req.headers.authorization });
    const nodes: Record<string, unknown> = {
      '/api/v1/nodes/node-a': { spec: { podCIDRs: ['10.244.7.0/24', 'fd00:10:244:7::/64'] } },
      '/api/v1/nodes/node-b': { spec: {} },
    };
    const body = nodes[req.url ?? ''];
    res
      .writeHead(body ? 200 : 404, { 'content-type': 'application/json' })
      .end(JSON.stringify(body ?? { kind: 'Status' }));
  });
  await new Promise<void>((r) => api.listen(0, '127.0.0.1', () => r()));
  t.onTestFinished(() => new Promise<void>((r) => api.close(() => r())));
  const port = (api.address() as { port: number }).port;
  const args = (node: string) => [
    'install',
    `--shim=${DIST_BIN}/ferry-cni`,
    `--cni-bin-dir=${dir}/bin`,
    `--conflist=${conflist}`,
    `--cni-conf-dir=${dir}/net.d`,
    `--ferryd-config-template=${template}`,
    `--ferryd-config-out=${dir}/run/ferryd.yaml`,
    `--node=${node}`,
    `--api-server=http://127.0.0.1:${port}`,
    `--api-token-file=${token}`,
  ];
  const ok = await ferryctl(...args('node-a'));
  expect(ok.exitCode, ok.stderr).toBe(0);
  expect(seen[0]).toEqual({ url: '/api/v1/nodes/node-a', auth: 'Bearer test-token' });
  const rendered = parseYaml(readFileSync(join(dir, 'run', 'ferryd.yaml'), 'utf8')) as {
    networks: { ipv4: { subnet: string } }[];
  };
  expect(rendered.networks[0]?.ipv4.subnet).toBe('10.244.7.0/24');
  expect(statSync(join(dir, 'run', 'ferryd.yaml')).mode & 0o777).toBe(0o600);

  const none = await ferryctl(...args('node-b'));
  expect(none.exitCode).toBe(1);
  expect(none.stderr).toContain('node node-b has no IPv4 pod CIDR (the template names {{POD_CIDR_V4}})');
  // Nothing of the failed run replaced what the good one wrote.
  expect(readFileSync(join(dir, 'run', 'ferryd.yaml'), 'utf8')).toContain('10.244.7.0/24');
  const missing = await ferryctl(...args('node-z'));
  expect(missing.exitCode).toBe(1);
  expect(missing.stderr).toContain('get node node-z: HTTP 404');
});

test('the two steps run apart, as the DaemonSet runs them; half a step is a usage error', async (t) => {
  const dir = useTmpDir(t, 'install');
  const { conflist, template } = configMapFiles(dir);
  // A template without placeholders needs no node and no API.
  const plain = join(dir, 'plain.yaml');
  writeFileSync(plain, readFileSync(template, 'utf8').replaceAll('{{POD_CIDR_V4}}', '10.244.9.0/24'));
  const render = await ferryctl(
    'install',
    `--ferryd-config-template=${plain}`,
    `--ferryd-config-out=${dir}/run/f.yaml`,
  );
  expect(render.exitCode, render.stderr).toBe(0);
  expect(render.stdout).toBe(`rendered ${dir}/run/f.yaml`);
  expect(readFileSync(join(dir, 'run', 'f.yaml'), 'utf8')).toContain('10.244.9.0/24');
  expect(() => readdirSync(join(dir, 'bin'))).toThrow();

  const needsNode = await ferryctl(
    'install',
    `--ferryd-config-template=${template}`,
    `--ferryd-config-out=${dir}/x.yaml`,
  );
  expect(needsNode.exitCode).toBe(2);
  expect(needsNode.stderr).toContain('--node is needed');

  const half = await ferryctl('install', `--shim=${DIST_BIN}/ferry-cni`, `--conflist=${conflist}`);
  expect(half.exitCode).toBe(2);
  expect(half.stderr).toContain('--shim, --cni-bin-dir, --conflist and --cni-conf-dir together');
  const nothing = await ferryctl('install');
  expect(nothing.exitCode).toBe(2);
  expect(nothing.stderr).toContain('install needs the CNI files');
  expect(() => readdirSync(join(dir, 'net.d'))).toThrow();
});
