/**
 * Per-pod NICs through the Kubernetes API (issue 20): pods in real namespaces ask for delegated NICs with
 * their `ferry.dev/nics` annotation, held in the stand-in API server; a real ferryd watches the node's
 * pods and decides, the real shim builds, and the pod's network-status says what it got. Tenants are
 * namespaces: team-a may have the frontend and sriov groups and static addresses in 198.51.100.0/28,
 * team-b the backend group and 198.51.100.16/28. Whatever a pod may not or cannot have is refused before
 * anything is built, naming the pod, the annotation and the problem.
 */
import { Code, POD_LOOKUP_FAILED } from '@ferry/shared-types/errors';
import { POD_NICS_ANNOTATION } from '@ferry/shared-types/kube/pod-nics';
import { describe, expect, test } from 'vitest';
import { netConf, newContainerId } from '../fixtures/conf';
import { ferryctl } from '../fixtures/ferryctl';
import type { Ferryd } from '../fixtures/ferryd';
import { FAST_PASSES } from '../fixtures/ferryd';
import { addresses, link, linkNames, routes } from '../fixtures/kernel';
import { type TestNetns, useNetns } from '../fixtures/netns';
import { ferryEntries, podCniArgs, untilNetworkStatus } from '../fixtures/network-status';
import { addPod, type GroupDevice, LOOKUP_TIMEOUT_MS, type PodNode, putPod, usePodNode } from '../fixtures/pod-node';
import type { Scope } from '../fixtures/scope';
import { runShim } from '../fixtures/shim';
import { waitFor } from '../fixtures/wait';

const FE1: GroupDevice = { name: 'ens1f0', mac: '02:fe:00:00:a0:01', group: 'frontend' };
const FE2: GroupDevice = { name: 'ens1f1', mac: '02:fe:00:00:a0:02', group: 'frontend' };
const BE1: GroupDevice = { name: 'ens3f0', mac: '02:fe:00:00:b0:01', group: 'backend' };
const VF1: GroupDevice = { name: 'ens2f0v1', mac: '02:fe:00:00:c0:01', group: 'sriov', pciAddress: '0000:18:02.1' };
const DEVICES = [FE1, FE2, BE1, VF1];

const TENANCY = {
  deviceGroups: [
    { group: 'frontend', namespaces: ['team-a'] },
    { group: 'sriov', namespaces: ['team-a'] },
    { group: 'backend', namespaces: ['team-b'] },
  ],
  staticAddresses: [
    { namespaces: ['team-a'], ranges: ['198.51.100.0/28'] },
    { namespaces: ['team-b'], ranges: ['198.51.100.16/28'] },
  ],
};

const useTenantNode = (t: Scope, config: Record<string, unknown> = {}) =>
  usePodNode(t, DEVICES, { tenancy: TENANCY, ...config });
const nicsOf = (nics: unknown) => ({ [POD_NICS_ANNOTATION]: JSON.stringify(nics) });

interface Device {
  mac: string;
  state: string;
  pciAddress?: string;
  assignedTo?: { podNamespace?: string; podName?: string };
}

async function devices(ferryd: Ferryd): Promise<Device[]> {
  return ((await ferryd.request('GET', '/v1/operator/devices')).json as { devices: Device[] }).devices;
}

async function untilAllFree(ferryd: Ferryd): Promise<void> {
  await waitFor('every device free', async () => (await devices(ferryd)).every((d) => d.state === 'free'));
}

interface Result {
  interfaces: { name: string; mac?: string; sandbox?: string; pciID?: string }[];
  ips: { address: string; gateway?: string; interface?: number }[];
}

/** Nothing of a refused ADD is left: the pod netns as it was, the node as it was (`node`), no endpoint. */
async function expectNothingBuilt(
  n: PodNode,
  pod: TestNetns,
  containerId: string,
  node: string[] = n.baseline,
): Promise<void> {
  expect(await linkNames(pod), 'the pod netns').toEqual(['lo']);
  expect(await linkNames(n.node), 'the node').toEqual(node);
  expect((await n.ferryd.request('GET', `/v1/endpoints/${containerId}`)).status, 'no endpoint').toBe(404);
}

test('two pods on one node: only the one whose annotation asks gets the device, named and addressed as it asks; network-status lists eth0 and the device (MAC, addresses, PCI); DEL takes them out', async (t) => {
  const n = await useTenantNode(t);
  const asked = nicsOf([
    {
      pciAddress: VF1.pciAddress,
      ifName: 'vf0',
      addresses: ['198.51.100.5/28'],
      gateway: '198.51.100.1',
      routes: [{ dst: '203.0.113.0/24' }],
    },
  ]);
  const web1 = await putPod(n.api, 'team-a', 'web-5d8f7c9b4-x2kqp', asked);
  const web2 = await putPod(n.api, 'team-a', 'web-5d8f7c9b4-m7wzt');

  const one = await addPod(t, n, web1);
  expect(one.add.exitCode, one.add.stdout).toBe(0);
  const two = await addPod(t, n, web2);
  expect(two.add.exitCode, two.add.stdout).toBe(0);
  const pod1 = one.call.netns;
  const pod2 = two.call.netns;

  // The annotated pod: eth0 and the VF as vf0, with its address and route; the other: eth0 alone.
  expect(await linkNames(pod1)).toEqual(['eth0', 'lo', 'vf0']);
  expect(await linkNames(pod2)).toEqual(['eth0', 'lo']);
  expect((await link(pod1, 'vf0'))?.address).toBe(VF1.mac);
  expect(await addresses(pod1, 'vf0')).toEqual(['198.51.100.5/28']);
  expect((await routes(pod1, 4)).find((r) => r.dst === '203.0.113.0/24')).toMatchObject({
    gateway: '198.51.100.1',
    dev: 'vf0',
  });
  expect(await link(n.node, VF1.name)).toBeUndefined();
  const result = one.add.json as unknown as Result;
  const vf0 = result.interfaces.findIndex((i) => i.name === 'vf0');
  expect(result.interfaces[vf0]).toEqual({
    name: 'vf0',
    mac: VF1.mac,
    sandbox: pod1.path,
    pciID: VF1.pciAddress,
  });
  expect(result.ips.filter((ip) => ip.interface === vf0)).toEqual([
    { address: '198.51.100.5/28', gateway: '198.51.100.1', interface: vf0 },
  ]);
  const held = (await devices(n.ferryd)).filter((d) => d.state !== 'free');
  expect(held).toEqual([
    expect.objectContaining({
      mac: VF1.mac,
      pciAddress: VF1.pciAddress,
      assignedTo: expect.objectContaining({ podName: web1.name }),
    }),
  ]);
  const check = await runShim(n.node, 'CHECK', { ...one.call, conf: { ...one.call.conf, prevResult: one.add.json } });
  expect(check.exitCode, check.stdout).toBe(0);

  // What a Kubernetes user reads back.
  const eth0 = result.interfaces.findIndex((i) => i.name === 'eth0' && i.sandbox);
  const status1 = await untilNetworkStatus(n.api, web1, (s) => ferryEntries(s).length === 2, 'pod-nics: ADD');
  expect(status1.map(({ 'dev.ferry.attachment': _, ...e }) => e)).toEqual([
    {
      name: 'ferry',
      interface: 'eth0',
      ips: result.ips.filter((ip) => ip.interface === eth0).map((ip) => ip.address.split('/')[0]),
      mac: result.interfaces[eth0]?.mac,
      default: true,
    },
    {
      name: 'ferry',
      interface: 'vf0',
      ips: ['198.51.100.5'],
      mac: VF1.mac,
      default: false,
      'device-info': { type: 'pci', version: '1.1.0', pci: { 'pci-address': VF1.pciAddress } },
    },
  ]);
  const status2 = await untilNetworkStatus(
    n.api,
    web2,
    (s) => ferryEntries(s).length === 1,
    'pod-nics: ADD (no intent)',
  );
  expect(status2.map((e) => e.interface)).toEqual(['eth0']);

  for (const k of [1, 2]) {
    const del = await runShim(n.node, 'DEL', one.call);
    expect(del.exitCode, `DEL #${k}: ${del.stdout}`).toBe(0);
  }
  expect(await linkNames(pod1)).toEqual(['lo']);
  expect((await link(n.node, VF1.name))?.address).toBe(VF1.mac);
  await untilNetworkStatus(n.api, web1, (s) => s === undefined, 'pod-nics: DEL');
  await untilAllFree(n.ferryd);
});

test("the pod's intent wins over the conflist's delegatedNICs: by MAC it gets that device, by PCI address that VF alone, `[]` none; a pod without the annotation gets the conflist's", async (t) => {
  const n = await useTenantNode(t);
  const conflist = { delegatedNICs: { group: 'frontend', count: 1 } };
  const cases = [
    { name: 'by-mac', nics: [{ mac: FE2.mac.toUpperCase() }], links: ['eth0', 'lo', 'net1'], device: FE2 },
    { name: 'by-pci', nics: [{ pciAddress: VF1.pciAddress }], links: ['eth0', 'lo', 'net1'], device: VF1 },
    { name: 'none', nics: [], links: ['eth0', 'lo'] },
    // The conflist's frontend device: FE2 is by-mac's, so FE1.
    { name: 'plain', links: ['eth0', 'lo', 'net1'], device: FE1 },
  ];
  for (const c of cases) {
    const pod = await putPod(n.api, 'team-a', c.name, c.nics ? nicsOf(c.nics) : {});
    const r = await addPod(t, n, pod, conflist);
    expect(r.add.exitCode, `${c.name}: ${r.add.stdout}`).toBe(0);
    expect(await linkNames(r.call.netns), c.name).toEqual(c.links);
    if (c.device) expect((await link(r.call.netns, 'net1'))?.address, c.name).toBe(c.device.mac);
  }
  expect(
    (await devices(n.ferryd))
      .filter((d) => d.state !== 'free')
      .map((d) => d.mac)
      .sort(),
  ).toEqual([FE1.mac, FE2.mac, VF1.mac].sort());
});

test('a pod asking for a group with no free device gets 106 naming the pod and the annotation, and leaves nothing; ferryctl and the metric show it; once a device is free its retry succeeds', async (t) => {
  const n = await useTenantNode(t);
  const first = await putPod(n.api, 'team-a', 'fe-1', nicsOf([{ group: 'frontend' }, { group: 'frontend' }]));
  const late = await putPod(n.api, 'team-a', 'fe-2', nicsOf([{ group: 'frontend', ifName: 'fe0' }]));
  const a = await addPod(t, n, first);
  expect(a.add.exitCode, a.add.stdout).toBe(0);

  const b = await addPod(t, n, late);
  expect(b.add.exitCode).toBe(1);
  expect(b.add.json).toEqual({
    cniVersion: '1.1.0',
    code: Code.DeviceUnavailable,
    msg: 'pod team-a/fe-2: annotation ferry.dev/nics: asks for 1 devices of group "frontend": 0 free on this node',
  });
  expect(await linkNames(b.call.netns)).toEqual(['lo']);
  expect((await n.ferryd.request('GET', `/v1/endpoints/${b.call.containerId}`)).status).toBe(404);

  const shown = await ferryctl(n.ferryd, '--json', 'pods', 'show', 'team-a/fe-2');
  expect(JSON.parse(shown.stdout)).toMatchObject({
    name: 'fe-2',
    nics: [{ group: 'frontend', ifName: 'fe0' }],
    refused: { code: Code.DeviceUnavailable, reason: 'unavailable', msg: (b.add.json as { msg: string }).msg },
  });
  const listed = await ferryctl(n.ferryd, 'pods');
  expect(listed.stdout).toMatch(
    /team-a\/fe-2 .* unavailable \(106\): pod team-a\/fe-2: annotation ferry\.dev\/nics: asks for 1/,
  );
  const metrics = (await n.ferryd.request('GET', '/metrics')).body;
  expect(metrics).toMatch(/^ferry_pod_nic_refusals_total\{reason="unavailable"\} 1$/m);

  // The first pod goes: the retried ADD (as the kubelet retries) gets a device, and the refusal is gone.
  expect((await runShim(n.node, 'DEL', a.call)).exitCode).toBe(0);
  const retry = await runShim(n.node, 'ADD', b.call);
  expect(retry.exitCode, retry.stdout).toBe(0);
  expect(await linkNames(b.call.netns)).toEqual(['eth0', 'fe0', 'lo']);
  const after = await ferryctl(n.ferryd, '--json', 'pods', 'show', 'team-a/fe-2');
  expect(JSON.parse(after.stdout)).not.toHaveProperty('refused');
});

test("a pod in a namespace not bound to a group, or asking for a static address outside its namespace's ranges, is refused with 116 and builds nothing", async (t) => {
  const n = await useTenantNode(t);
  const cases = [
    {
      pod: await putPod(n.api, 'team-b', 'api-1', nicsOf([{ group: 'frontend' }])),
      msg: 'pod team-b/api-1: annotation ferry.dev/nics: [0].group: namespace team-b may not use device group "frontend"',
    },
    {
      pod: await putPod(n.api, 'team-b', 'api-2', nicsOf([{ mac: FE1.mac }])),
      msg: `pod team-b/api-2: annotation ferry.dev/nics: [0].mac: namespace team-b may not use device ${FE1.mac}`,
    },
    {
      pod: await putPod(n.api, 'team-a', 'web-1', nicsOf([{ group: 'frontend', addresses: ['198.51.100.20/28'] }])),
      msg: 'pod team-a/web-1: annotation ferry.dev/nics: [0].addresses[0]: 198.51.100.20/28 is outside the ranges of namespace team-a (198.51.100.0/28)',
    },
    {
      pod: await putPod(n.api, 'default', 'web-1', nicsOf([{ group: 'backend', addresses: ['198.51.100.20/28'] }])),
      msg: 'pod default/web-1: annotation ferry.dev/nics: [0].addresses: namespace default may give no static addresses',
    },
  ];
  for (const c of cases) {
    const r = await addPod(t, n, c.pod);
    expect(r.add.json, c.pod.name).toEqual({ cniVersion: '1.1.0', code: Code.InvalidPodIntent, msg: c.msg });
    await expectNothingBuilt(n, r.call.netns, r.call.containerId);
  }
  expect((await n.ferryd.request('GET', '/metrics')).body).toMatch(
    /^ferry_pod_nic_refusals_total\{reason="not-allowed"\} 4$/m,
  );
  // Inside its range, in its group: given.
  const ok = await putPod(n.api, 'team-b', 'api-3', nicsOf([{ group: 'backend', addresses: ['198.51.100.20/28'] }]));
  const r = await addPod(t, n, ok);
  expect(r.add.exitCode, r.add.stdout).toBe(0);
  expect(await addresses(r.call.netns, 'net1')).toEqual(['198.51.100.20/28']);
});

/**
 * What a tenant may write into an annotation, each refused: what does not parse, what is too big, what
 * the schema refuses (unknown keys, two ways to ask, the primary interface, duplicate names), and what
 * parses but belongs to another tenant or to nobody.
 */
const HOSTILE: [string, string][] = [
  ['not JSON', '{nics'],
  ['an object, not a list', '{"group":"frontend"}'],
  ['a string', '"frontend"'],
  ['null', 'null'],
  ['a list of null', '[null]'],
  ['a list of lists', '[[]]'],
  ['a number for a group', '[{"group":1}]'],
  ['a boolean for a MAC', '[{"mac":true}]'],
  ['an entry asking for nothing', '[{}]'],
  ['an entry asking two ways', JSON.stringify([{ group: 'frontend', mac: FE1.mac }])],
  ['an unknown key', '[{"group":"frontend","vlan":7}]'],
  ['a prototype key', '[{"group":"frontend","__proto__":{"admin":true}}]'],
  ['nine entries', JSON.stringify(Array.from({ length: 9 }, () => ({ group: 'frontend' })))],
  ['a list of 5000', JSON.stringify(Array.from({ length: 5000 }, () => ({ group: 'frontend' })))],
  ['a group name of 20000 characters', JSON.stringify([{ group: 'x'.repeat(20_000) }])],
  ['5000 nested lists', `${'['.repeat(5000)}${']'.repeat(5000)}`],
  ['eth0', '[{"group":"frontend","ifName":"eth0"}]'],
  ['lo', '[{"group":"frontend","ifName":"lo"}]'],
  ['duplicate ifNames', '[{"group":"frontend","ifName":"fe0"},{"group":"sriov","ifName":"fe0"}]'],
  ['an ifName of 16 bytes', '[{"group":"frontend","ifName":"abcdefghijklmnop"}]'],
  ['an ifName with a slash', '[{"group":"frontend","ifName":"a/b"}]'],
  ["another tenant's MAC", JSON.stringify([{ mac: BE1.mac }])],
  ["another tenant's MAC in capitals", JSON.stringify([{ mac: BE1.mac.toUpperCase() }])],
  ["another tenant's group", '[{"group":"backend"}]'],
  ["another tenant's static address", '[{"group":"frontend","addresses":["198.51.100.20/28"]}]'],
  ["an address of the pods' pool", '[{"group":"frontend","addresses":["10.244.1.7/32"]}]'],
  ['an address that is not one', '[{"group":"frontend","addresses":["198.51.100.300/28"]}]'],
  [
    'a gateway of no address family of the NIC',
    '[{"group":"frontend","addresses":["198.51.100.5/28"],"gateway":"2001:db8::1"}]',
  ],
  [
    '17 routes',
    JSON.stringify([{ group: 'frontend', routes: Array.from({ length: 17 }, (_, i) => ({ dst: `10.${i}.0.0/16` })) }]),
  ],
  ['a malformed PCI address', '[{"pciAddress":"18:02.1"}]'],
  ['a PCI address with no device', '[{"pciAddress":"0000:99:00.0"}]'],
  ['an unknown group', '[{"group":"gpu"}]'],
  ['an unknown network', '[{"group":"frontend","network":"nope"}]'],
  ['one device twice, by MAC and by PCI address', JSON.stringify([{ mac: VF1.mac }, { pciAddress: VF1.pciAddress }])],
  ['more devices than the node has', JSON.stringify(Array.from({ length: 3 }, () => ({ group: 'frontend' })))],
];

describe('hostile annotations', () => {
  test(`${HOSTILE.length} malformed and hostile annotations: each a clear error naming the pod and the annotation, nothing built, ferryd serving`, async (t) => {
    const n = await useTenantNode(t);
    const pod = await useNetns(t, 'pod');
    const refused = new Map<number, number>();
    for (const [k, [what, text]] of HOSTILE.entries()) {
      const name = `fuzz-${k}`;
      const { uid } = await putPod(n.api, 'team-a', name, { [POD_NICS_ANNOTATION]: text });
      const call = {
        containerId: newContainerId(),
        ifName: 'eth0',
        netns: pod,
        conf: netConf(n.ferryd),
        cniArgs: podCniArgs('team-a', name, uid),
      };
      const add = await runShim(n.node, 'ADD', call);
      const body = add.json as { code: number; msg: string };
      expect(add.exitCode, what).toBe(1);
      expect([Code.InvalidPodIntent, Code.DeviceUnavailable], `${what}: ${body.msg}`).toContain(body.code);
      expect(body.msg, what).toMatch(new RegExp(`^pod team-a/${name}: annotation ferry\\.dev/nics: `));
      expect(body.msg.length, `${what}: a message of reasonable length`).toBeLessThan(400);
      refused.set(body.code, (refused.get(body.code) ?? 0) + 1);
      await expectNothingBuilt(n, pod, call.containerId);
    }
    console.log(`pod-nics: hostile annotations refused by code: ${JSON.stringify(Object.fromEntries(refused))}`);
    // ferryd is still serving, with every device free, and the next pod that asks properly gets its NIC.
    expect((await n.ferryd.request('GET', '/readyz')).status).toBe(200);
    expect((await devices(n.ferryd)).map((d) => d.state)).toEqual(DEVICES.map(() => 'free'));
    const good = await putPod(n.api, 'team-a', 'web-1', nicsOf([{ group: 'frontend' }]));
    const r = await addPod(t, n, good);
    expect(r.add.exitCode, r.add.stdout).toBe(0);
    expect(await linkNames(r.call.netns)).toEqual(['eth0', 'lo', 'net1']);
  });
});

test('the API server stopped mid-run and back: ADDs of cached pods get their NICs, DELs bring theirs home, a pod it never delivered fails with 11 within the bound, and network-status catches up', async (t) => {
  // Writes missed while the API server was away are made at the writer's next resync.
  const n = await useTenantNode(t, FAST_PASSES);
  const web1 = await putPod(n.api, 'team-a', 'web-1', nicsOf([{ group: 'frontend', ifName: 'fe0' }]));
  const web3 = await putPod(n.api, 'team-a', 'web-3', nicsOf([{ group: 'frontend', ifName: 'fe0' }]));
  const c = await addPod(t, n, web3);
  expect(c.add.exitCode, c.add.stdout).toBe(0);
  await untilNetworkStatus(n.api, web3, (s) => ferryEntries(s).length === 2, 'pod-nics: web-3 ADD');
  await waitFor('web-1 in the cache', async () => {
    const r = await ferryctl(n.ferryd, '--json', 'pods');
    return (JSON.parse(r.stdout || '{"pods":[]}').pods as { name: string }[]).some((p) => p.name === 'web-1');
  });
  await n.api.stop();

  // DEL never needs the API server: web-3's device comes home and is free again.
  const del = await runShim(n.node, 'DEL', c.call);
  expect(del.exitCode, del.stdout).toBe(0);
  expect(await linkNames(c.call.netns)).toEqual(['lo']);
  await waitFor('a frontend device free', async () =>
    (await devices(n.ferryd)).some((d) => d.state === 'free' && [FE1.mac, FE2.mac].includes(d.mac)),
  );

  const a = await addPod(t, n, web1);
  expect(a.add.exitCode, a.add.stdout).toBe(0);
  expect(await linkNames(a.call.netns)).toEqual(['eth0', 'fe0', 'lo']);
  const unseen = await putPod(n.api, 'team-a', 'web-2', nicsOf([{ group: 'frontend' }]));
  const nodeBefore = await linkNames(n.node);
  const t0 = performance.now();
  const b = await addPod(t, n, unseen);
  console.log(
    `pod-nics: a pod not in the cache, API server away: code 11 after ${(performance.now() - t0).toFixed(0)} ms (bound ${LOOKUP_TIMEOUT_MS} ms)`,
  );
  expect(b.add.json).toEqual({
    cniVersion: '1.1.0',
    code: Code.TryAgainLater,
    msg: expect.stringMatching(/^look up pod team-a\/web-2: the Kubernetes API did not answer within 1500 ms/),
    details: POD_LOOKUP_FAILED,
  });
  // One lookup: the shim hands a ready ferryd's 11 to the runtime instead of waiting and asking again.
  expect((await n.ferryd.request('GET', '/metrics')).body).toMatch(
    /^ferry_pod_lookups_total\{result="unavailable"\} 1$/m,
  );
  await expectNothingBuilt(n, b.call.netns, b.call.containerId, nodeBefore);
  await waitFor('a failed network-status write', async () =>
    /^ferry_network_status_writes_total\{result="failed"\} [1-9]/m.test(
      (await n.ferryd.request('GET', '/metrics')).body,
    ),
  );

  await n.api.start();
  const status = await untilNetworkStatus(
    n.api,
    web1,
    (s) => ferryEntries(s).length === 2,
    'pod-nics: API server back',
  );
  expect(status.map((e) => e.interface)).toEqual(['eth0', 'fe0']);
  await untilNetworkStatus(n.api, web3, (s) => s === undefined, 'pod-nics: web-3 DEL while away');
  // And the pod it had not delivered: the kubelet's retry now succeeds.
  const retry = await runShim(n.node, 'ADD', b.call);
  expect(retry.exitCode, retry.stdout).toBe(0);
});
