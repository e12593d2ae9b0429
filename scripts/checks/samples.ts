/**
 * Typical documents of each generated check's schema, as they arrive on its hot path: checks.test.ts
 * requires each check to take them (or the hot path would pay for zod) and mutates them to hold the check
 * to its schema.
 */
import { interfaceRecordOf } from '../../packages/shared-types/src/testing/records';

const CONTAINER = '3f2a9c0d1e4b5a6978877665544332211aabbccddeeff00112233445566778899';
const v4 = { family: 4 as const, address: '10.244.0.5/32', gateway: '169.254.1.1' };
const v6 = { family: 6 as const, address: 'fd00:10:244::5/128', gateway: 'fe80::ecee:eeff:feee:eeee' };
const infraPlan = {
  nicType: 'InfraNIC',
  ifName: 'eth0',
  endpointId: 'c1',
  hostVethName: 'fry1a2b3c4d5e6',
  hostVethMac: 'ee:ee:ee:ee:ee:ee',
  hostVethAlias: 'ferry:gen=1 net=ferry if=eth0 ctr=c1 ns=/var/run/netns/p1',
  addresses: [v4, v6],
  routes: [
    { dst: '0.0.0.0/0', gw: '169.254.1.1' },
    { dst: '::/0', gw: 'fe80::ecee:eeff:feee:eeee' },
  ],
  mtu: 1450,
};
const delegatedPlan = {
  nicType: 'DelegatedNIC',
  ifName: 'net1',
  endpointId: 'c1-net1',
  mac: '02:00:00:00:00:01',
  hostIfName: 'ens5',
  addresses: [{ family: 4, address: '10.245.0.7/24' }],
  routes: [{ dst: '10.245.0.0/16' }],
};
const record = interfaceRecordOf({
  netns: '/var/run/netns/p1',
  pod: { namespace: 'default', name: 'web', uid: 'u1' },
  addresses: [v4, v6],
  routes: infraPlan.routes,
  mac: '02:42:0a:f4:00:05',
  containerIfIndex: 2,
  hostVethName: 'fry1a2b3c4d5e6',
});
const { mac: _, containerIfIndex: __, ...allocatedRecord } = record;
const delegatedRecord = {
  ...record,
  ifName: 'net1',
  endpointId: 'c1-net1',
  nicType: 'DelegatedNIC',
  hostIfName: 'ens5',
  deviceMac: '02:00:00:00:00:01',
  addresses: delegatedPlan.addresses,
  routes: delegatedPlan.routes,
  adoptedAt: '2026-12-01T08:00:00.000Z',
};
const CONF = { cniVersion: '1.0.0', name: 'ferry', type: 'ferry-cni' };
const LINK = {
  ifindex: 2,
  ifname: 'eth0',
  flags: ['BROADCAST', 'UP', 'LOWER_UP'],
  mtu: 1500,
  operstate: 'UP',
  group: 'default',
  link_type: 'ether',
  address: '02:42:0a:f4:00:05',
  linkinfo: { info_kind: 'vxlan', info_data: { id: 1, port: 8472, local: '192.0.2.1', learning: false } },
  extra: { kept: true },
};
const ADDR = { family: 'inet6', local: 'fd00::5', prefixlen: 128, scope: 'global', nodad: true };
const ROUTE = {
  dst: 'default',
  gateway: '169.254.1.1',
  dev: 'eth0',
  table: 'main',
  type: 'unicast',
  scope: 'global',
  protocol: 'boot',
  pref: 'medium',
  flags: [],
};
const attachmentRow = {
  generation: 7,
  network: 'ferry',
  container_id: 'c1',
  if_name: 'eth0',
  netns: '/var/run/netns/p1',
  pod_namespace: 'default',
  pod_name: 'web',
  pod_uid: null,
  pod_infra_container_id: null,
  state: 'committed',
  created_at_ms: 1_796_000_000_000,
  updated_at_ms: 1_796_000_000_500,
  adopted_at_ms: null,
};
const addressRow = {
  pool_id: 1,
  offset_hex: '00000005',
  address: '10.244.0.5',
  state: 'Assigned',
  interface_id: 9,
  since_ms: 1_796_000_000_000,
  available_at_ms: null,
};
const deviceRow = {
  id: '0000:3b:02.1',
  mac: '02:00:00:00:00:01',
  grp: 'frontend',
  host_if_name: 'ens5',
  present: 1,
  interface_id: null,
  reserved_namespace: 'default',
  reserved_pod: 'web',
  reserved_if_name: null,
  reserved_json: '{}',
  seen_at_ms: 1_796_000_000_000,
};

export const SAMPLES: Record<string, unknown[]> = {
  isNetConf: [
    CONF,
    { ...CONF, daemonSocket: '/run/ferry/ferryd.sock', logFile: '/var/log/ferry/cni.log', logLevel: 'debug' },
    { ...CONF, mtu: 1450, deleteQueue: '/var/lib/ferry/q', deleteQueueLimit: 100, ipMasq: false, unknownKey: [1] },
    { ...CONF, prevResult: { cniVersion: '1.0.0', interfaces: [{ name: 'eth0' }], ips: [] } },
    { ...CONF, args: { cni: { ips: ['10.0.0.1'] } }, capabilities: { portMappings: true } },
    {
      ...CONF,
      runtimeConfig: {
        portMappings: [{ hostPort: 8080, containerPort: 80, protocol: 'tcp' }],
        mac: '02:00:00:00:00:09',
      },
      dns: { nameservers: ['10.96.0.10'], search: ['svc.cluster.local'] },
      delegatedNICs: { group: 'frontend', count: 1 },
      daemonTimeouts: { connectMs: 500, addWaitMs: 0 },
    },
    { ...CONF, 'cni.dev/valid-attachments': [{ containerID: CONTAINER, ifname: 'eth0' }] },
  ],
  isAnyResult: [
    {
      cniVersion: '1.0.0',
      interfaces: [
        { name: 'fry0', mac: 'ee:ee:ee:ee:ee:ee' },
        { name: 'eth0', sandbox: '/var/run/netns/p' },
      ],
      ips: [{ address: '10.244.1.5/32', gateway: '169.254.1.1', interface: 1 }],
      routes: [{ dst: '0.0.0.0/0', gw: '169.254.1.1' }],
      dns: { nameservers: ['10.96.0.10'] },
    },
    { cniVersion: '0.3.1', ips: [{ version: '4', address: '10.0.0.2/24' }], portMappings: [] },
  ],
  isAllocation: [
    {
      network: 'ferry',
      containerId: 'c1',
      ifName: 'eth0',
      generation: 1,
      nics: [{ ...infraPlan, addresses: [v4], routes: [infraPlan.routes[0]] }],
    },
    {
      network: 'ferry',
      containerId: 'c1',
      ifName: 'eth0',
      generation: 3,
      nics: [infraPlan, delegatedPlan],
      dns: { nameservers: ['10.96.0.10'], search: ['svc'] },
    },
  ],
  isAllocateRequest: [
    { network: 'ferry', containerId: CONTAINER, ifName: 'eth0', netns: '/var/run/netns/cni-1' },
    {
      network: 'ferry',
      containerId: CONTAINER,
      ifName: 'eth0',
      netns: '/proc/4242/ns/net',
      pod: { namespace: 'default', name: 'web-0', uid: '6c0b1a3e-3f7e-4d8e-9a51-2b6f0d6f1c11', infraContainerId: 'x' },
      delegatedNICs: { group: 'frontend', count: 2 },
    },
  ],
  isContainerIdParams: [{ containerId: CONTAINER }, { containerId: 'a' }, { containerId: 'pod_1.b-2' }],
  isEndpoint: [
    { containerId: 'c1', interfaces: [record] },
    { containerId: 'c1', interfaces: [{ ...allocatedRecord, state: 'allocated', pod: {} }, delegatedRecord] },
  ],
  isReleaseResult: [
    { released: [] },
    { released: [record] },
    { released: [], toTearDown: [allocatedRecord, delegatedRecord] },
  ],
  isCommitRequest: [
    {
      network: 'ferry',
      ifName: 'eth0',
      generation: 7,
      nics: [
        { ifName: 'eth0', mac: '0a:58:0a:f4:00:05', containerIfIndex: 2 },
        { ifName: 'net1', mac: '02:00:00:00:00:01', containerIfIndex: 3 },
      ],
    },
  ],
  // As the querystring parser gives it; a generation comes as text, which only the schema coerces.
  isReleaseQuery: [
    { network: 'ferry', ifName: 'eth0' },
    { network: 'ferry', ifName: 'eth0', hostVethDeleted: 'true' },
    { network: 'n-2', ifName: 'net1', generation: 999_999_999_999_999 },
  ],
  isIpLinkList: [[LINK], [LINK, { ifindex: 1, ifname: 'lo', flags: ['LOOPBACK'] }], []],
  isIpAddrList: [[{ ifindex: 2, ifname: 'eth0', address: '02:42:0a:f4:00:05', flags: ['UP'], addr_info: [ADDR] }]],
  isIpRouteList: [[ROUTE, { dst: 'fd00::5', dev: 'fry1a2b3c4d5e6', flags: ['onlink'] }]],
  isAttachmentRow: [attachmentRow, { ...attachmentRow, state: 'allocated', pod_uid: 'u1' }],
  isInterfaceRow: [
    {
      id: 9,
      attachment_id: 7,
      position: 0,
      container_id: 'c1',
      if_name: 'eth0',
      endpoint_id: 'c1-eth0',
      nic_type: 'InfraNIC',
      routes_json: '[]',
      mac: '0a:58:0a:f4:00:05',
      container_if_index: 2,
      host_veth_name: 'fry1a2b3c4d5e6',
      host_if_name: null,
      device_mac: null,
      static_addresses_json: null,
    },
  ],
  isAddressRow: [
    addressRow,
    { ...addressRow, state: 'PendingRelease', interface_id: null, available_at_ms: 1_796_000_030_000 },
  ],
  isFamilyAddressRow: [{ ...addressRow, family: 4 }],
  isAddressListRow: [{ ...addressRow, family: 6, network: 'ferry', container_id: 'c1', if_name: null }],
  isDeviceRow: [deviceRow],
  isAssignmentRow: [
    {
      ...deviceRow,
      container_id: 'c1',
      if_name: 'net1',
      attachment_state: 'committed',
      attachment_updated_at_ms: 1_796_000_000_000,
      pod_namespace: null,
      pod_name: null,
    },
  ],
  isPoolRow: [
    { id: 1, network: 'ferry', family: 6, subnet: 'fd00::/64', cursor_hex: null },
    { id: 2, network: 'ferry', family: 4, subnet: '10.244.0.0/24', cursor_hex: '000000ff' },
  ],
  isCount: [{ n: 0 }, { n: 12 }],
  isCursor: [null, '000000ff'],
  isStateCount: [{ pool_id: 1, state: 'Assigned', n: 3 }],
  isInterfaceCount: [{ network: 'ferry', nicType: 'InfraNIC', n: 40 }],
};
