import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { loadConfig, parseFlags } from './config';
import { tempDir } from './testing/harness';

const yaml = `
networks:
  - name: ferry
    ipv4: { subnet: 10.244.1.0/24 }
socket: /run/from-file.sock
logLevel: warn
`;

test('YAML file, then FERRY_* environment, then flags, each overriding the one before', (t) => {
  const file = join(tempDir(t), 'ferryd.yaml');
  writeFileSync(file, yaml);
  const fromFile = loadConfig(file, {}, {}).config;
  expect(fromFile.socket).toBe('/run/from-file.sock');
  expect(fromFile.logLevel).toBe('warn');
  expect(fromFile.cooldownSec).toBe(30);

  const env = { FERRY_SOCKET: '/run/from-env.sock', FERRY_LOG_LEVEL: 'debug' };
  expect(loadConfig(file, env, {}).config).toMatchObject({ socket: '/run/from-env.sock', logLevel: 'debug' });

  const flags = parseFlags(['--config', file, '--socket', '/run/from-flag.sock']);
  expect(flags.config).toBe(file);
  expect(loadConfig(file, env, flags.overrides).config).toMatchObject({
    socket: '/run/from-flag.sock',
    logLevel: 'debug',
  });
});

const NET = 'networks: [{ name: a, ipv4: { subnet: 10.0.0.0/24 } }]';
const KUBE = 'cluster: { nodeName: n1, kubernetes: { kubeconfig: /etc/kubeconfig } }';

test.for([
  ['not YAML at all: [', /^parse config /],
  ['networks: []', /networks: /],
  [
    'networks: [{ name: a, ipv4: { subnet: 10.0.0.0/24 } }, { name: a, ipv4: { subnet: 10.1.0.0/24 } }]',
    /"a" is configured twice/,
  ],
  ['networks: [{ name: a, ipv6: { subnet: 10.0.0.0/24 } }]', /is not an IPv6 subnet/],
  [
    'networks: [{ name: a, ipv4: { subnet: 10.0.0.0/24, rangeStart: 10.9.0.1 } }]',
    /rangeStart: "10.9.0.1" is not inside/,
  ],
  ['networks: [{ name: a }]', /needs ipv4, ipv6 or both/],
  [
    'networks: [{ name: a, ipv4: { subnet: 10.0.0.0/16 } }, { name: b, ipv4: { subnet: 10.0.7.0/24 } }]',
    /networks\[1\]\.ipv4\.subnet: "10.0.7.0\/24" overlaps networks\[0\]\.ipv4\.subnet "10.0.0.0\/16"/,
  ],
  [
    'networks: [{ name: a, ipv4: { subnet: 10.0.0.0/24, exclude: [10.0.1.5] } }]',
    /exclude\[0\]: "10.0.1.5" is not inside the subnet/,
  ],
  [
    'networks: [{ name: a, ipv4: { subnet: 10.0.0.0/24, exclude: ["fd00::1"] } }]',
    /exclude\[0\]: "fd00::1" is not IPv4/,
  ],
  [
    'networks: [{ name: a, ipv4: { subnet: 10.0.0.0/24, exclude: [10.0.0.1/24] } }]',
    /exclude\[0\]: "10.0.0.1\/24" has host bits set/,
  ],
  [
    'networks: [{ name: a, ipv4: { subnet: 10.0.0.0/24, rangeStart: 10.0.0.8, rangeEnd: 10.0.0.11, exclude: [10.0.0.8/30] } }]',
    /networks\[0\]\.ipv4\.exclude: covers the whole range/,
  ],
  ['networks: [{ name: a, ipv4: { subnet: 10.0.0.0/24 } }]\nbogus: 1', /bogus|Unrecognized/],
  [
    'networks: [{ name: a, ipv4: { subnet: 10.0.0.0/24 } }]\ndelegatedDevices: [{ group: g }]',
    /delegatedDevices\[0\]: needs mac, namePattern or selectors \(vendors, devices, drivers, pfNames, rootDevices, linkTypes\)/,
  ],
  [
    `${NET}\ndelegatedDevices: [{ group: g, mac: '02:00:00:00:00:01', drivers: [iavf] }]`,
    /delegatedDevices\[0\]: mac and drivers are alternatives/,
  ],
  [
    `${NET}\ndelegatedDevices: [{ group: g, pfNames: ['ens1f0#3-'] }]`,
    /pfNames\[0\]: not a PF name with an optional VF range/,
  ],
  [`${NET}\ndelegatedDevices: [{ group: g, vendors: ['0x8086'] }]`, /vendors\[0\]: not a 4-digit hex ID/],
  [`${NET}\ndelegatedDevices: [{ group: g, rootDevices: ['3b:00.0'] }]`, /rootDevices\[0\]: not a PCI address/],
  [`${NET}\ncluster: { routing: host-gw }`, /cluster\.nodeName: required/],
  [`${NET}\ncluster: { nodeName: a, routing: bgp }`, /cluster\.routing/],
  [
    `${NET}\ncluster: { nodeName: a, routing: host-gw, peers: [{ name: b, addresses: [10.9.0.2], podCIDRs: [10.0.0.128/25] }] }`,
    /cluster\.peers\[0\]\.podCIDRs\[0\]: "10.0.0.128\/25" overlaps networks\[0\]\.ipv4/,
  ],
  [
    `${NET}\ncluster: { nodeName: a, routing: host-gw, peers: [{ name: b, addresses: [10.9.0.2], podCIDRs: [10.1.0.1/24] }] }`,
    /podCIDRs\[0\]: "10.1.0.1\/24" has host bits set/,
  ],
  [
    `${NET}\ncluster: { nodeName: a, routing: host-gw, peers: [{ name: b, addresses: [10.9.0.2], podCIDRs: [10.1.0.0/24] }, { name: b, addresses: [10.9.0.3], podCIDRs: [10.2.0.0/24] }] }`,
    /peers\[1\]\.name: "b" is listed twice/,
  ],
  [
    `${NET}\ncluster: { nodeName: a, routing: host-gw, peers: [{ name: b, addresses: [10.9.0.2], podCIDRs: [10.1.0.0/24] }, { name: c, addresses: [10.9.0.3], podCIDRs: [10.1.0.0/25] }] }`,
    /peers\[1\]\.podCIDRs\[0\]: "10.1.0.0\/25" overlaps cluster\.peers\[0\]\.podCIDRs\[0\]/,
  ],
  [
    `${NET}\ncluster: { nodeName: a, routing: vxlan, kubernetes: {}, peers: [{ name: b, addresses: [10.9.0.2], podCIDRs: [10.1.0.0/24] }] }`,
    /either a static peer list or kubernetes/,
  ],
  [
    `${NET}\ncluster: { nodeName: a, routing: vxlan, vxlan: { device: "a-name-far-too-long" } }`,
    /cluster\.vxlan\.device/,
  ],
  // Cluster IPAM.
  [
    `networks: [{ name: a, ipv4: { subnet: 10.0.0.0/16, blocks: {} } }]`,
    /networks\[0\]\.ipv4\.blocks: needs cluster\.kubernetes and cluster\.nodeName/,
  ],
  [
    `networks: [{ name: a, ipv4: { subnet: 10.0.0.0/16, blocks: { prefixLength: 16 } } }]\n${KUBE}`,
    /ipv4\.blocks\.prefixLength: \/16 must be longer than the range's \/16 and at most \/30/,
  ],
  [
    `networks: [{ name: a, ipv4: { subnet: 10.0.0.0/16, blocks: { prefixLength: 31 } } }]\n${KUBE}`,
    /ipv4\.blocks\.prefixLength: \/31 must be longer/,
  ],
  [
    `networks: [{ name: a, ipv6: { subnet: "fd00::/48", blocks: { prefixLength: 40 } } }]\n${KUBE}`,
    /ipv6\.blocks\.prefixLength: \/40 must be longer than the range's \/48 and at most \/126/,
  ],
  [
    `networks: [{ name: a, ipv4: { subnet: 10.0.0.0/16, blocks: { minFree: 16, maxFree: 64 } } }]\n${KUBE}`,
    /ipv4\.blocks\.maxFree: 64 is below minFree \(16\) plus one block \(64\)/,
  ],
  [
    `networks: [{ name: a, ipv4: { subnet: 10.0.0.0/16, blocks: { minFree: 128, maxBlocks: 2 } } }]\n${KUBE}`,
    /ipv4\.blocks\.minFree: 128 cannot be free in 2 blocks \(maxBlocks\) of 64 addresses/,
  ],
  [
    `networks: [{ name: a, ipv4: { subnet: 10.0.0.0/16, rangeStart: 10.0.0.10, blocks: {} } }]\n${KUBE}`,
    /ipv4\.rangeStart: does not apply to a range split into blocks; use exclude/,
  ],
  [
    `networks: [{ name: a, ipv4: { subnet: 10.0.0.0/16, blocks: {} } }]\n${KUBE}\ntenancy: { staticAddresses: [{ namespaces: [a], ranges: [10.0.7.0/28] }] }`,
    /staticAddresses\[0\]\.ranges\[0\]: "10.0.7.0\/28" overlaps networks\[0\]\.ipv4/,
  ],
  [
    `networks: [{ name: a, ipv4: { subnet: 10.0.0.0/16, blocks: {} } }, { name: b, infraNIC: false, ipv4: { subnet: 10.0.200.0/24, blocks: {} } }]\n${KUBE}`,
    /networks\[1\]\.ipv4\.subnet: "10.0.200.0\/24" overlaps networks\[0\]\.ipv4\.subnet "10.0.0.0\/16"/,
  ],
  // Secondary networks.
  [
    'networks: [{ name: a, ipv4: { subnet: 10.0.0.0/24, gateway: 10.0.0.1 } }]',
    /networks\[0\]\.ipv4\.gateway: only a network without InfraNIC/,
  ],
  [
    'networks: [{ name: a, infraNIC: false, ipv4: { subnet: 10.0.0.0/24, gateway: 10.0.1.1 } }]',
    /networks\[0\]\.ipv4\.gateway: "10.0.1.1" is not inside 10.0.0.0\/24/,
  ],
  [
    'networks: [{ name: a, infraNIC: false, ipv4: { subnet: 10.0.0.0/24, defaultRoute: true } }]',
    /networks\[0\]\.ipv4\.defaultRoute: needs `gateway`/,
  ],
  ['networks: [{ name: a, infraNIC: false, mtu: 9000 }]', /networks\[0\]\.mtu: a network without InfraNIC/],
  // Tenancy.
  [
    `${NET}\ntenancy: { deviceGroups: [{ group: g, namespaces: [a] }] }`,
    /deviceGroups\[0\]\.group: "g" is not a group/,
  ],
  [
    `${NET}\ndelegatedDevices: [{ mac: "02:00:00:00:00:01", group: g }]\ntenancy: { deviceGroups: [{ group: g, namespaces: [a] }, { group: g, namespaces: [b] }] }`,
    /deviceGroups\[1\]\.group: "g" is bound twice/,
  ],
  [
    `${NET}\ndelegatedDevices: [{ mac: "02:00:00:00:00:01", group: g }]\ntenancy: { deviceGroups: [{ group: g, namespaces: [Not_A_Namespace] }] }`,
    /tenancy\.deviceGroups\[0\]\.namespaces\[0\]: not a namespace name/,
  ],
  [
    `${NET}\ntenancy: { staticAddresses: [{ namespaces: [a], ranges: [10.0.0.128/25] }] }`,
    /staticAddresses\[0\]\.ranges\[0\]: "10.0.0.128\/25" overlaps networks\[0\]\.ipv4/,
  ],
  [
    `${NET}\ntenancy: { staticAddresses: [{ namespaces: [a], ranges: [192.0.2.0/24] }, { namespaces: [b], ranges: [192.0.2.64/26] }] }`,
    /staticAddresses\[1\]\.ranges\[0\]: "192.0.2.64\/26" overlaps tenancy\.staticAddresses\[0\]\.ranges\[0\]/,
  ],
  [
    `${NET}\ntenancy: { staticAddresses: [{ namespaces: [a], ranges: [192.0.2.1/24] }] }`,
    /staticAddresses\[0\]\.ranges\[0\]: "192.0.2.1\/24" has host bits set/,
  ],
  // The device plugin.
  [`${NET}\ndevicePlugin: {}`, /devicePlugin: delegatedDevices has no group to serve/],
  [
    `${NET}\ndelegatedDevices: [{ mac: "02:00:00:00:00:01", group: g }]\ndevicePlugin: { groups: [h] }`,
    /devicePlugin\.groups\[0\]: "h" is not a group of delegatedDevices/,
  ],
  [
    `${NET}\ndelegatedDevices: [{ mac: "02:00:00:00:00:01", group: g- }]\ndevicePlugin: {}`,
    /delegatedDevices: group: "g-" cannot be a resource name ferry\.dev\/g-/,
  ],
  [
    `${NET}\ndelegatedDevices: [{ mac: "02:00:00:00:00:01", group: g }]\ndevicePlugin: { kubeletDir: var/lib/kubelet }`,
    /devicePlugin\.kubeletDir: must be an absolute path/,
  ],
  [
    `${NET}\ndelegatedDevices: [{ mac: "02:00:00:00:00:01", group: g }, { mac: "02:00:00:00:00:02", group: h }]\ndevicePlugin: { groups: [g], preferSamePf: [h] }`,
    /devicePlugin\.preferSamePf\[0\]: "h" is not a served group/,
  ],
  [`${NET}\nmetrics: { port: 70000 }`, /metrics\.port/],
  [`${NET}\nmetrics: { host: "" }`, /metrics\.host/],
  [
    `${NET}\ntcp: { port: 9479, tokenFile: /t }\nmetrics: {}`,
    /metrics\.port: 9479 is also tcp\.port \(the operator listener\)/,
  ],
] as const)('refuses %j naming the problem', ([text, msg], t) => {
  const file = join(tempDir(t), 'ferryd.yaml');
  writeFileSync(file, text);
  expect(() => loadConfig(file, {}, {})).toThrow(msg);
});

test('a secondary network may have no pool; its defaults: no default route, no MTU; tenancy and sysfs defaults', (t) => {
  const file = join(tempDir(t), 'ferryd.yaml');
  writeFileSync(
    file,
    `${NET.replace(']', ', { name: sriov, infraNIC: false }, { name: l2, infraNIC: false, ipv4: { subnet: 192.168.5.0/24, gateway: 192.168.5.1 } }]')}`,
  );
  const { config } = loadConfig(file, {}, {});
  expect(config.networks.map((n) => [n.name, n.infraNIC])).toEqual([
    ['a', true],
    ['sriov', false],
    ['l2', false],
  ]);
  expect(config.tenancy).toEqual({ deviceGroups: [], staticAddresses: [] });
  expect(config.sysfsRoot).toBe('/sys');
});

test('the scrape listener: off unless configured; every IPv4 address, port 9479 by default', (t) => {
  const file = join(tempDir(t), 'ferryd.yaml');
  writeFileSync(file, NET);
  expect(loadConfig(file, {}, {}).config.metrics).toBeUndefined();
  writeFileSync(file, `${NET}\nmetrics: {}`);
  expect(loadConfig(file, {}, {}).config.metrics).toEqual({ host: '0.0.0.0', port: 9479 });
  writeFileSync(file, `${NET}\ntcp: { port: 0, tokenFile: /t }\nmetrics: { host: "::", port: 0 }`);
  expect(loadConfig(file, {}, {}).config.metrics).toEqual({ host: '::', port: 0 });
});

test('an unknown flag is an error naming it', () => {
  expect(() => parseFlags(['--sockett', '/x'])).toThrow(/sockett/);
});

test('the cluster section: defaults, NODE_NAME wins over the file, a node may find itself in the peer list', (t) => {
  const file = join(tempDir(t), 'ferryd.yaml');
  writeFileSync(
    file,
    `${NET}\ncluster: { nodeName: from-file, routing: vxlan, peers: [{ name: node-a, addresses: [10.9.0.1], podCIDRs: [10.0.0.0/24] }, { name: node-b, addresses: [10.9.0.2], podCIDRs: [10.1.0.0/24] }] }`,
  );
  // As node "from-file", node-a's CIDR is someone else's and clashes with this node's pool.
  expect(() => loadConfig(file, {}, {})).toThrow(/peers\[0\]\.podCIDRs\[0\]: "10.0.0.0\/24" overlaps/);
  const { cluster } = loadConfig(file, { NODE_NAME: 'node-a' }, {}).config;
  expect(cluster).toMatchObject({
    nodeName: 'node-a',
    routing: 'vxlan',
    masquerade: false,
    clusterCIDRs: [],
    vxlan: { vni: 1, port: 8472, device: 'ferry.1' },
    resyncSec: 60,
    reclaimSec: 30,
  });
});

test('in a pod of a cluster, routing without static peers watches the Node objects', (t) => {
  const file = join(tempDir(t), 'ferryd.yaml');
  writeFileSync(file, `${NET}\ncluster: { routing: host-gw }`);
  const env = { NODE_NAME: 'node-a', KUBERNETES_SERVICE_HOST: '10.96.0.1' };
  expect(loadConfig(file, env, {}).config.cluster?.kubernetes).toEqual({});
  writeFileSync(file, `${NET}\ncluster: { routing: none }`);
  expect(loadConfig(file, env, {}).config.cluster?.kubernetes).toBeUndefined();
});

test("the pod watch: with any routing (none too), the node's name from NODE_NAME, defaults filled in", (t) => {
  const file = join(tempDir(t), 'ferryd.yaml');
  writeFileSync(file, `${NET}\ncluster: { routing: none, kubernetes: { pods: {} } }`);
  expect(() => loadConfig(file, {}, {})).toThrow(/cluster\.nodeName: required/);
  const { config } = loadConfig(file, { NODE_NAME: 'node-a' }, {});
  expect(config.cluster).toMatchObject({
    nodeName: 'node-a',
    routing: 'none',
    kubernetes: { pods: { lookupTimeoutMs: 3000, networkStatus: true } },
  });
  // An ADD waits for the lookup inside the shim's own request deadline.
  writeFileSync(file, `${NET}\ncluster: { routing: none, kubernetes: { pods: { lookupTimeoutMs: 9000 } } }`);
  expect(() => loadConfig(file, { NODE_NAME: 'node-a' }, {})).toThrow(
    /cluster\.kubernetes\.pods\.lookupTimeoutMs: .*8000/,
  );
  writeFileSync(
    file,
    `${NET}\ncluster: { routing: none, kubernetes: { pods: { networkStatus: false, watch: true } } }`,
  );
  expect(() => loadConfig(file, { NODE_NAME: 'node-a' }, {})).toThrow(/cluster\.kubernetes\.pods: .*"watch"/);
});

test("the device plugin: off unless configured; the kubelet's directory and every group by default", (t) => {
  const file = join(tempDir(t), 'ferryd.yaml');
  const devices = 'delegatedDevices: [{ mac: "02:00:00:00:00:01", group: frontend }]';
  writeFileSync(file, `${NET}\n${devices}`);
  expect(loadConfig(file, {}, {}).config.devicePlugin).toBeUndefined();
  writeFileSync(file, `${NET}\n${devices}\ndevicePlugin: {}`);
  expect(loadConfig(file, {}, {}).config.devicePlugin).toEqual({
    kubeletDir: '/var/lib/kubelet',
    podResourcesTimeoutMs: 2000,
    preferSamePf: [],
    deviceInfoDir: '/var/run/k8s.cni.cncf.io/devinfo/dp',
  });
});

test('cluster IPAM: a range with blocks, defaults filled in; peers of other nodes may sit inside the range', (t) => {
  const file = join(tempDir(t), 'ferryd.yaml');
  writeFileSync(
    file,
    `networks: [{ name: a, ipv4: { subnet: 10.0.0.0/16, blocks: {} }, ipv6: { subnet: "fd00:10::/64", blocks: { minFree: 4, maxFree: 100 } } }]
cluster: { nodeName: n1, routing: host-gw, kubernetes: { kubeconfig: /etc/kubeconfig } }`,
  );
  const { config } = loadConfig(file, {}, {});
  expect(config.networks[0]?.ipv4?.blocks).toEqual({ releaseAfterSec: 300, maxBlocks: 20, waitMs: 3000 });
  expect(config.networks[0]?.ipv6?.blocks).toMatchObject({ minFree: 4, maxFree: 100 });
});
