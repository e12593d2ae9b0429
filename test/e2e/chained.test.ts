/**
 * Ferry first in a conflist, followed by the reference plugins from Debian's containernetworking-plugins:
 * portmap (DNAT on the node), tuning (pod sysctls) and bandwidth (tc and an ifb on the host veth).
 */
import { expect, test } from 'vitest';
import { netConf, newContainerId } from '../fixtures/conf';
import { type Conflist, conflistAdd, conflistCheck, conflistDel } from '../fixtures/conflist';
import { linkNames } from '../fixtures/kernel';
import { inNetns, useNetns } from '../fixtures/netns';
import { useNode } from '../fixtures/node';

test('ferry → portmap → tuning → bandwidth: ADD, CHECK, DEL through the conflist runner', async (t) => {
  const { node, ferryd } = await useNode(t);
  const pod = await useNetns(t, 'pod');
  const { cniVersion: _v, name: _n, ...ferry } = netConf(ferryd);
  const list: Conflist = {
    cniVersion: '1.0.0',
    name: 'ferry',
    plugins: [
      ferry,
      { type: 'portmap', capabilities: { portMappings: true }, snat: true },
      { type: 'tuning', sysctl: { 'net.core.somaxconn': '512' } },
      { type: 'bandwidth', capabilities: { bandwidth: true } },
    ],
  };
  const call = {
    containerId: newContainerId(),
    ifName: 'eth0',
    netns: pod,
    capabilityArgs: {
      portMappings: [{ hostPort: 18080, containerPort: 80, protocol: 'tcp' }],
      bandwidth: { ingressRate: 1_000_000, ingressBurst: 100_000, egressRate: 1_000_000, egressBurst: 100_000 },
    },
  };

  const add = await conflistAdd(node, list, call);
  expect(add.exitCode, `${add.failed}: ${JSON.stringify(add.json)}`).toBe(0);
  const result = add.json as { interfaces: { name: string }[]; ips: { address: string }[] };
  const hostVeth = result.interfaces[0]?.name ?? '';
  expect(result.ips.map((i) => i.address)).toEqual(['10.244.1.1/32', 'fd00:10:244:1::1/128']);
  expect(await inNetns(pod, 'cat', '/proc/sys/net/core/somaxconn')).toBe('512');
  const nat = await inNetns(node, 'iptables-save', '-t', 'nat');
  expect(nat).toContain('--dport 18080');
  expect(await inNetns(node, 'tc', 'qdisc', 'show', 'dev', hostVeth)).toContain('tbf');
  expect((await linkNames(node)).filter((n) => n.startsWith('bwp'))).toHaveLength(1);

  // Debian's portmap 1.1.1 cannot pass CHECK here whatever came before it: its checkPorts looks for the
  // IPv4 DNAT chain in ip6tables too ("could not check ipv6 dnat"). CHECK runs for every other plugin.
  const check = await conflistCheck(node, list, call, add.json, { skip: ['portmap'] });
  expect(check.runs).toHaveLength(3);
  expect(check.exitCode, `${check.failed}: ${JSON.stringify(check.json)}`).toBe(0);

  for (const n of [1, 2]) {
    const del = await conflistDel(node, list, call, add.json);
    expect(del.exitCode, `DEL #${n} ${del.failed}: ${JSON.stringify(del.json)}`).toBe(0);
  }
  expect(await linkNames(node)).toEqual(['lo']);
  expect(await inNetns(node, 'iptables-save', '-t', 'nat')).not.toContain('--dport 18080');
  expect(await ferryd.assignedAddresses()).toEqual([]);
});
