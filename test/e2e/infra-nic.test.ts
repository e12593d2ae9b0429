/**
 * The InfraNIC through the real shim binary, a real ferryd and real namespaces, for every spec version.
 */
import { resultSchemaFor } from '@ferry/shared-types/cni/result';
import { SUPPORTED_VERSIONS, specHas } from '@ferry/shared-types/cni/versions';
import { describe, expect, test } from 'vitest';
import { netConf, newContainerId } from '../fixtures/conf';
import { addMacvlan, addresses, link, linkNames, links, ping, routes } from '../fixtures/kernel';
import { inNetns, removeNetns, type TestNetns, useNetns } from '../fixtures/netns';
import { NODE_IPV4, NODE_IPV6, useNode } from '../fixtures/node';
import { runShim } from '../fixtures/shim';

interface Result {
  interfaces: { name: string; mac?: string; sandbox?: string }[];
  ips: { address: string; gateway?: string; interface?: number }[];
}

const podAddress = (r: unknown, family: 4 | 6) =>
  (r as Result).ips.find((ip) => ip.address.includes(':') === (family === 6))?.address.split('/')[0] ?? '';

describe.for(SUPPORTED_VERSIONS)('InfraNIC, cniVersion %s', (cniVersion) => {
  test('ADD → CHECK → DEL → DEL leaves nothing behind', async (t) => {
    const { node, ferryd } = await useNode(t);
    const pod = await useNetns(t, 'pod');
    const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf: netConf(ferryd, { cniVersion }) };

    const add = await runShim(node, 'ADD', call);
    expect(add.exitCode, add.stdout).toBe(0);
    const parsed = resultSchemaFor(cniVersion).safeParse(add.json);
    expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
    const result = add.json as unknown as Result;
    expect(result.interfaces[1]).toMatchObject({ name: 'eth0', sandbox: pod.path });
    expect(await addresses(pod, 'eth0')).toEqual([`${podAddress(result, 4)}/32`, `${podAddress(result, 6)}/128`]);
    expect(await ping(pod, NODE_IPV4)).toBe(true);
    expect(await ping(pod, NODE_IPV6)).toBe(true);

    const check = await runShim(node, 'CHECK', {
      ...call,
      conf: netConf(ferryd, { cniVersion, prevResult: add.json }),
    });
    if (specHas.check(cniVersion)) expect(check.exitCode, check.stdout).toBe(0);
    else expect(check.json).toMatchObject({ code: 1, msg: 'config version does not allow CHECK' });

    for (const n of [1, 2]) {
      const del = await runShim(node, 'DEL', { ...call, conf: netConf(ferryd, { cniVersion, prevResult: add.json }) });
      expect(del.exitCode, `DEL #${n}: ${del.stdout}`).toBe(0);
      expect(del.stdout).toBe('');
    }
    expect(await linkNames(node)).toEqual(['lo']);
    expect(await linkNames(pod)).toEqual(['lo']);
    expect(await ferryd.assignedAddresses()).toEqual([]);
  });
});

describe('InfraNIC datapath', () => {
  test('two pods reach each other through the node, and the node reaches both, over IPv4 and IPv6', async (t) => {
    const { node, ferryd } = await useNode(t);
    const pods = [await useNetns(t, 'pod'), await useNetns(t, 'pod')];
    const results = [];
    for (const pod of pods) {
      const r = await runShim(node, 'ADD', {
        containerId: newContainerId(),
        ifName: 'eth0',
        netns: pod,
        conf: netConf(ferryd),
      });
      expect(r.exitCode, r.stdout).toBe(0);
      results.push(r.json);
    }
    const [a, b] = pods as [TestNetns, TestNetns];
    for (const family of [4, 6] as const) {
      expect(await ping(a, podAddress(results[1], family)), `pod a → pod b, IPv${family}`).toBe(true);
      expect(await ping(b, podAddress(results[0], family)), `pod b → pod a, IPv${family}`).toBe(true);
      expect(await ping(node, podAddress(results[0], family)), `node → pod a, IPv${family}`).toBe(true);
    }
  });

  test('routes and neighbour entries are what docs/architecture.md says', async (t) => {
    const { node, ferryd } = await useNode(t);
    const pod = await useNetns(t, 'pod');
    const r = await runShim(node, 'ADD', {
      containerId: newContainerId(),
      ifName: 'eth0',
      netns: pod,
      conf: netConf(ferryd, { mtu: 1400 }),
    });
    expect(r.exitCode, r.stdout).toBe(0);
    const hostVeth = (r.json as unknown as Result).interfaces[0]?.name ?? '';
    expect(hostVeth).toMatch(/^fry[0-9a-f]{12}$/);
    expect(await routes(pod, 4)).toEqual(
      expect.arrayContaining([expect.objectContaining({ dst: 'default', gateway: '169.254.1.1', dev: 'eth0' })]),
    );
    expect(await routes(pod, 6)).toEqual(
      expect.arrayContaining([expect.objectContaining({ dst: 'default', gateway: 'fe80::ecee:eeff:feee:eeee' })]),
    );
    const nodeRoutes = await routes(node, 4);
    expect(nodeRoutes).toEqual(
      expect.arrayContaining([expect.objectContaining({ dst: podAddress(r.json, 4), dev: hostVeth })]),
    );
    expect((await link(node, hostVeth))?.address).toBe('ee:ee:ee:ee:ee:ee');
    expect((await link(pod, 'eth0'))?.mtu).toBe(1400);
    const neigh = await inNetns(pod, 'ip', 'neigh', 'show', '169.254.1.1');
    expect(neigh).toContain('lladdr ee:ee:ee:ee:ee:ee PERMANENT');
  });

  test('runtimeConfig.mac sets the pod MAC, and ferryd records it with the final ifindex', async (t) => {
    const { node, ferryd } = await useNode(t);
    const pod = await useNetns(t, 'pod');
    const containerId = newContainerId();
    const conf = netConf(ferryd, { runtimeConfig: { mac: '0a:58:0a:f4:01:99' } });
    const r = await runShim(node, 'ADD', { containerId, ifName: 'eth0', netns: pod, conf });
    expect(r.exitCode, r.stdout).toBe(0);
    const live = await link(pod, 'eth0');
    expect(live?.address).toBe('0a:58:0a:f4:01:99');
    const ep = await ferryd.request('GET', `/v1/endpoints/${containerId}`);
    expect(ep.json).toMatchObject({
      interfaces: [{ mac: '0a:58:0a:f4:01:99', containerIfIndex: live?.ifindex, netns: pod.path, state: 'committed' }],
    });
  });
});

describe('CHECK', () => {
  test("finds what changed behind Ferry's back and lists all of it (code 109)", async (t) => {
    const { node, ferryd } = await useNode(t);
    const pod = await useNetns(t, 'pod');
    const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf: netConf(ferryd) };
    const add = await runShim(node, 'ADD', call);
    expect(add.exitCode, add.stdout).toBe(0);
    const withPrev = { ...call, conf: netConf(ferryd, { prevResult: add.json }) };
    expect((await runShim(node, 'CHECK', withPrev)).exitCode).toBe(0);

    await inNetns(pod, 'ip', 'addr', 'del', `${podAddress(add.json, 4)}/32`, 'dev', 'eth0');
    await inNetns(pod, 'ip', '-6', 'route', 'del', 'default');
    const hostVeth = (add.json as unknown as Result).interfaces[0]?.name ?? '';
    await inNetns(node, 'ip', 'link', 'set', hostVeth, 'down');
    const check = await runShim(node, 'CHECK', withPrev);
    expect(check.exitCode).toBe(1);
    expect(check.json).toMatchObject({ code: 109 });
    const details = String(check.json?.details);
    expect(details).toContain(`host veth ${hostVeth} is down`);
    expect(details).toContain(`eth0 lacks address ${podAddress(add.json, 4)}/32`);
    expect(details).toContain('route to ::/0 via fe80::ecee:eeff:feee:eeee is missing');

    await runShim(node, 'DEL', call);
    const gone = await runShim(node, 'CHECK', withPrev);
    expect(gone.json).toMatchObject({
      code: 109,
      msg: expect.stringContaining('ferryd holds no record of this attachment'),
    });
  });
});

describe('DEL is idempotent', () => {
  test('DEL with no ADD, with an empty CNI_NETNS, and without prevResult exits 0', async (t) => {
    const { node, ferryd } = await useNode(t);
    const pod = await useNetns(t, 'pod');
    for (const netns of [pod, '', '/var/run/netns/ferry-t-never-existed']) {
      const r = await runShim(node, 'DEL', {
        containerId: newContainerId(),
        ifName: 'eth0',
        netns,
        conf: netConf(ferryd),
      });
      expect(r.exitCode, r.stdout).toBe(0);
    }
  });

  test('addresses are released when the netns is already gone (CNI_NETNS empty or vanished)', async (t) => {
    const { node, ferryd } = await useNode(t);
    for (const variant of ['empty', 'vanished'] as const) {
      const pod = await useNetns(t, 'pod');
      const containerId = newContainerId();
      const add = await runShim(node, 'ADD', { containerId, ifName: 'eth0', netns: pod, conf: netConf(ferryd) });
      expect(add.exitCode, add.stdout).toBe(0);
      await removeNetns(pod.name);
      const del = await runShim(node, 'DEL', {
        containerId,
        ifName: 'eth0',
        netns: variant === 'empty' ? '' : pod.path,
        conf: netConf(ferryd),
      });
      expect(del.exitCode, del.stdout).toBe(0);
      expect(await ferryd.assignedAddresses()).toEqual([]);
      expect(await linkNames(node)).toEqual(['lo']);
    }
  });
});

describe('ADD failures', () => {
  test('CNI_IFNAME already in the pod → code 102, nothing created, the allocation released', async (t) => {
    const { node, ferryd } = await useNode(t);
    const pod = await useNetns(t, 'pod');
    await inNetns(pod, 'ip', 'link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'other0');
    const r = await runShim(node, 'ADD', {
      containerId: newContainerId(),
      ifName: 'eth0',
      netns: pod,
      conf: netConf(ferryd),
    });
    expect(r.exitCode).toBe(1);
    expect(r.json).toMatchObject({
      code: 102,
      msg: expect.stringContaining('an interface with that name already exists'),
    });
    expect(await linkNames(node)).toEqual(['lo']);
    expect(await linkNames(pod)).toEqual(['eth0', 'lo', 'other0']);
    expect(await ferryd.assignedAddresses()).toEqual([]);
  });

  test('a failure after the veth exists rolls everything back, and the DEL that follows succeeds', async (t) => {
    // A route whose gateway is not on-link makes the pod-side batch fail after the pair was created.
    const { node, ferryd } = await useNode(t, {
      networks: [
        { name: 'ferry', ipv4: { subnet: '10.244.1.0/24', routes: [{ dst: '10.96.0.0/12', gw: '192.0.2.77' }] } },
      ],
    });
    const pod = await useNetns(t, 'pod');
    const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf: netConf(ferryd) };
    const r = await runShim(node, 'ADD', call);
    expect(r.exitCode).toBe(1);
    expect(r.json).toMatchObject({ code: 103, msg: expect.stringContaining('route add 10.96.0.0/12 via 192.0.2.77') });
    expect(await linkNames(node)).toEqual(['lo']);
    expect(await linkNames(pod)).toEqual(['lo']);
    expect(await ferryd.assignedAddresses()).toEqual([]);
    // The runtime calls DEL after a failed ADD; it must succeed too.
    expect((await runShim(node, 'DEL', call)).exitCode).toBe(0);
  });

  test('a multicast runtimeConfig.mac is refused by the kernel; nothing is left', async (t) => {
    const { node, ferryd } = await useNode(t);
    const pod = await useNetns(t, 'pod');
    const conf = netConf(ferryd, { runtimeConfig: { mac: '01:00:5e:00:00:01' } });
    const r = await runShim(node, 'ADD', { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf });
    expect(r.exitCode).toBe(1);
    expect(r.json).toMatchObject({ code: 103 });
    expect(await linkNames(node)).toEqual(['lo']);
    expect(await ferryd.assignedAddresses()).toEqual([]);
  });
});

describe('ADD failures leave nothing behind', () => {
  test('the host side failing after the pair exists (IPv6 off on the node): code 103, no veth leaked', async (t) => {
    const { node, ferryd } = await useNode(t);
    // New links in this node namespace get no IPv6: the host veth's gateway address is refused.
    await inNetns(node, 'sysctl', '-qw', 'net.ipv6.conf.default.disable_ipv6=1');
    const pod = await useNetns(t, 'pod');
    const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf: netConf(ferryd) };
    const r = await runShim(node, 'ADD', call);
    expect(r.json).toMatchObject({ code: 103 });
    expect(await linkNames(node)).toEqual(['lo']);
    expect(await linkNames(pod)).toEqual(['lo']);
    expect(await ferryd.assignedAddresses()).toEqual([]);
    // The runtime retries in the same netns once the node is fixed: no stale "already exists".
    await inNetns(node, 'sysctl', '-qw', 'net.ipv6.conf.default.disable_ipv6=0');
    expect((await runShim(node, 'ADD', call)).exitCode).toBe(0);
  });

  test('"File exists" from a host route is a route error (103), not the pod\'s interface name (102)', async (t) => {
    const { node, ferryd } = await useNode(t, { networks: [{ name: 'ferry', ipv4: { subnet: '10.244.1.0/24' } }] });
    // A stale route to the address ferryd hands out first.
    await inNetns(node, 'ip', 'route', 'add', '10.244.1.1/32', 'dev', 'lo');
    const pod = await useNetns(t, 'pod');
    const r = await runShim(node, 'ADD', {
      containerId: newContainerId(),
      ifName: 'eth0',
      netns: pod,
      conf: netConf(ferryd),
    });
    expect(r.json).toMatchObject({ code: 103, msg: expect.stringContaining('route add 10.244.1.1/32') });
    expect(await linkNames(node)).toEqual(['lo']);
    expect(await linkNames(pod)).toEqual(['lo']);
    expect(await ferryd.assignedAddresses()).toEqual([]);
  });
});

describe('a second ADD of a live attachment', () => {
  test('is refused with 105, in the same netns or another, and the live pod keeps everything', async (t) => {
    const { node, ferryd } = await useNode(t);
    const pod = await useNetns(t, 'pod');
    const other = await useNetns(t, 'pod');
    const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf: netConf(ferryd) };
    expect((await runShim(node, 'ADD', call)).exitCode).toBe(0);
    const held = await ferryd.assignedAddresses();
    const nodeLinks = await linkNames(node);
    for (const netns of [pod, other]) {
      const again = await runShim(node, 'ADD', { ...call, netns });
      expect(again.json).toMatchObject({ code: 105, msg: expect.stringContaining('already set up') });
    }
    expect(await ferryd.assignedAddresses()).toEqual(held);
    expect(await linkNames(node)).toEqual(nodeLinks);
    expect(await linkNames(other)).toEqual(['lo']);
    expect(await ping(pod, NODE_IPV4)).toBe(true);
  });
});

describe("a DEL whose CNI_NETNS is the node's own namespace", () => {
  test('releases without ferryd yet touches nothing on the node', async (t) => {
    const { node, ferryd } = await useNode(t);
    await inNetns(node, 'ip', 'link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'eth0p');
    await addMacvlan(node, 'eth0p', 'uplink0', '02:fe:00:00:bb:01');
    await inNetns(node, 'ip', 'link', 'set', 'uplink0', 'up');
    const before = await links(node);
    await ferryd.kill('SIGKILL');
    const conf = netConf(ferryd, { deleteQueue: ferryd.deleteQueue, daemonTimeouts: { delWaitMs: 200 } });
    // The shim runs in the node namespace: CNI_NETNS names that very namespace.
    const r = await runShim(node, 'DEL', { containerId: newContainerId(), ifName: 'eth0', netns: node, conf });
    expect(r.exitCode, r.stdout).toBe(0);
    const after = await links(node);
    const seen = (ls: typeof before) => ls.map((l) => [l.ifname, l.address, l.operstate, l.ifalias ?? '']);
    expect(seen(after)).toEqual(seen(before));
    expect(seen(after).map(([name]) => name)).toEqual(expect.arrayContaining(['eth0', 'eth0p', 'uplink0']));
  });
});
