/**
 * Ferry under a real libcni-based runtime: podman 4.3 with its CNI backend runs containers on a Ferry
 * conflist. Connectivity is checked inside the test namespaces, and nothing is left after --rm.
 */
import { expect, test } from 'vitest';
import { ferryConflist } from '../fixtures/conf';
import { useNodeWithDevices } from '../fixtures/device';
import { link, linkNames } from '../fixtures/kernel';
import { NODE_IPV4, useNode } from '../fixtures/node';
import { IMAGE, usePodman } from '../fixtures/podman';

test('podman run --rm on a Ferry network: an address from ferryd, the node and a second container reachable, nothing left', async (t) => {
  const { node, ferryd } = await useNode(t);
  const podman = await usePodman(t, node, ferryConflist(ferryd));

  const server = await podman.run(
    'run',
    '-d',
    '--name',
    'server',
    ...podman.runFlags,
    '--network',
    'ferry',
    IMAGE,
    'sleep',
    '300',
  );
  expect(server.exitCode, server.stderr).toBe(0);
  const serverIp = (
    await podman.run('inspect', '--format', '{{.NetworkSettings.Networks.ferry.IPAddress}}', 'server')
  ).stdout.trim();
  expect(serverIp).toMatch(/^10\.244\.1\.\d+$/);

  const client = await podman.run(
    'run',
    '--rm',
    ...podman.runFlags,
    '--network',
    'ferry',
    IMAGE,
    'sh',
    '-c',
    `ip -o -4 addr show eth0 && ping -c 1 -W 2 ${NODE_IPV4} && ping -c 1 -W 2 ${serverIp}`,
  );
  expect(client.exitCode, `${client.stdout}\n${client.stderr}`).toBe(0);
  expect(client.stdout).toMatch(/inet 10\.244\.1\.\d+\/32/);
  expect(client.stdout).toContain(`64 bytes from ${serverIp}`);

  expect((await podman.run('rm', '--force', '--time', '0', 'server')).exitCode).toBe(0);
  expect(await linkNames(node)).toEqual(['lo']);
  expect(await ferryd.assignedAddresses()).toEqual([]);
  expect((await ferryd.request('GET', '/v1/operator/endpoints')).json).toEqual({ endpoints: [] });
});

test('podman run --rm with a delegated NIC: the container gets net1, the device comes home', async (t) => {
  const mac = '02:fe:00:00:bb:01';
  const { node, ferryd } = await useNodeWithDevices(t, [{ name: 'eth3', mac }]);
  const podman = await usePodman(t, node, ferryConflist(ferryd, { delegatedNICs: { group: 'frontend', count: 1 } }));

  const r = await podman.run(
    'run',
    '--rm',
    ...podman.runFlags,
    '--network',
    'ferry',
    IMAGE,
    'ip',
    '-o',
    'link',
    'show',
    'net1',
  );
  expect(r.exitCode, `${r.stdout}\n${r.stderr}`).toBe(0);
  expect(r.stdout).toContain(`link/ether ${mac}`);
  expect((await link(node, 'eth3'))?.address).toBe(mac);
  expect((await linkNames(node)).filter((n) => n.startsWith('fry'))).toEqual([]);
  expect(await ferryd.assignedAddresses()).toEqual([]);
});
