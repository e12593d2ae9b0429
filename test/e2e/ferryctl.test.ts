/** ferryctl against a live ferryd: tables, --json, doctor on a healthy and on a corrupted store. */
import Database from 'better-sqlite3';
import { expect, test } from 'vitest';
import { netConf, newContainerId } from '../fixtures/conf';
import { ferryctl } from '../fixtures/ferryctl';
import { useNetns } from '../fixtures/netns';
import { useNode } from '../fixtures/node';
import { runShim } from '../fixtures/shim';

test('endpoints, ipam and doctor; doctor reports a store broken behind ferryd', async (t) => {
  const { node, ferryd } = await useNode(t);
  const pod = await useNetns(t, 'pod');
  const containerId = newContainerId();
  const add = await runShim(node, 'ADD', {
    containerId,
    ifName: 'eth0',
    netns: pod,
    conf: netConf(ferryd),
    cniArgs: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0',
  });
  expect(add.exitCode, add.stdout).toBe(0);

  const eps = await ferryctl(ferryd, 'endpoints');
  expect(eps.exitCode, eps.stderr).toBe(0);
  expect(eps.stdout).toMatch(/^CONTAINER\s+POD\s+IFNAME/);
  expect(eps.stdout).toContain('default/web-0');
  expect(eps.stdout).toContain('10.244.1.1/32,fd00:10:244:1::1/128');
  const filtered = await ferryctl(ferryd, 'endpoints', '--namespace', 'kube-system', '--json');
  expect(JSON.parse(filtered.stdout)).toEqual({ endpoints: [] });
  const show = await ferryctl(ferryd, 'endpoints', 'show', containerId, '--json');
  expect(JSON.parse(show.stdout).interfaces[0]).toMatchObject({
    ifName: 'eth0',
    nicType: 'InfraNIC',
    endpointId: containerId,
  });

  const ipam = await ferryctl(ferryd, 'ipam');
  expect(ipam.stdout).toMatch(/ferry\s+IPv4\s+10\.244\.1\.0\/24\s+254\s+1\s+0\s+253\s+30s/);

  expect(await ferryctl(ferryd, 'doctor')).toMatchObject({ exitCode: 0, stdout: 'ok: every invariant holds' });
  const db = new Database(ferryd.database);
  db.prepare("DELETE FROM addresses WHERE address = '10.244.1.1'").run();
  db.close();
  const sick = await ferryctl(ferryd, 'doctor');
  expect(sick.exitCode).toBe(1);
  expect(sick.stdout).toContain('endpoint-without-address');
  expect(sick.stdout).toContain(`${containerId}/eth0`);
});

test('ferryctl says clearly when ferryd is down, and on bad usage', async (t) => {
  const { ferryd } = await useNode(t);
  await ferryd.kill('SIGKILL');
  const down = await ferryctl(ferryd, 'endpoints');
  expect(down.exitCode).toBe(3);
  expect(down.stderr).toMatch(/^ferryctl: ferryd is unreachable at socket .*ferryd\.sock: (ECONNREFUSED|ENOENT)/);
  const bad = await ferryctl(ferryd, 'frobnicate');
  expect(bad.exitCode).toBe(2);
  expect(bad.stderr).toContain('unknown command "frobnicate"');
});
