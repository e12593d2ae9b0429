/**
 * ferryd's configuration: a JSON or YAML file (docs/architecture.md "Entry points"), then FERRY_* environment
 * variables, then flags, each overriding the one before. Everything is validated by zod with errors
 * that name the field (the schema is shared: @ferry/shared-types/config/ferryd); pools are checked
 * against their subnet here so a bad range never reaches IPAM.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import {
  type ClusterConfig,
  DEFAULT_BLOCK_PREFIX,
  DEVICE_SELECTORS,
  type FerrydConfig,
  FerrydConfigSchema,
  type PoolConfig,
} from '@ferry/shared-types/config/ferryd';
import { CniError, Code } from '@ferry/shared-types/errors';
import { parseAs } from '@ferry/shared-types/parse';
import { parse as parseYaml } from 'yaml';
import { deviceKindProblem } from './devices/device-kind';
import {
  type Cidr,
  contains,
  familyOf,
  formatCidr,
  lastOf,
  overlaps,
  parseCidr,
  parseExclusion,
  toBigInt,
} from './ipam/cidr';
import { poolSpecsOf, withBlocks } from './ipam/pool';

export type {
  ClusterConfig,
  FerrydConfig,
  NetworkConfig,
  PoolConfig,
} from '@ferry/shared-types/config/ferryd';

/** Where each setting came from, for the start-up log. */
export interface LoadedConfig {
  config: FerrydConfig;
  file?: string;
}

const ENV_KEYS = {
  FERRY_SOCKET: 'socket',
  FERRY_DATABASE: 'database',
  FERRY_DELETE_QUEUE: 'deleteQueue',
  FERRY_LOG_LEVEL: 'logLevel',
  FERRY_BOOT_ID_PATH: 'bootIdPath',
} as const;

/** Parses ferryd's argv (without node and script). Unknown flags are an InvalidConfig error. */
export function parseFlags(argv: readonly string[]): {
  config?: string;
  check: boolean;
  uninstall: boolean;
  overrides: Record<string, string>;
} {
  const options = {
    config: { type: 'string', short: 'c' },
    check: { type: 'boolean' },
    uninstall: { type: 'boolean' },
    socket: { type: 'string' },
    database: { type: 'string' },
    'delete-queue': { type: 'string' },
    'log-level': { type: 'string' },
    'ready-file': { type: 'string' },
  } as const;
  let v: ReturnType<typeof parseArgs<{ options: typeof options }>>['values'];
  try {
    v = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false }).values;
  } catch (err) {
    throw new CniError(Code.InvalidConfig, `ferryd: ${(err as Error).message}`);
  }
  const overrides: Record<string, string> = {};
  if (v.socket) overrides.socket = v.socket;
  if (v.database) overrides.database = v.database;
  if (v['delete-queue']) overrides.deleteQueue = v['delete-queue'];
  if (v['log-level']) overrides.logLevel = v['log-level'];
  if (v['ready-file']) overrides.readyFile = v['ready-file'];
  return {
    ...(v.config ? { config: v.config } : {}),
    check: v.check ?? false,
    uninstall: v.uninstall ?? false,
    overrides,
  };
}

/** Reads the file (JSON, or YAML by extension or content), applies env and flag overrides, validates. */
export function loadConfig(
  file: string | undefined,
  env: NodeJS.ProcessEnv,
  flagOverrides: Record<string, string>,
): LoadedConfig {
  let raw: Record<string, unknown> = {};
  if (file) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new CniError(Code.IoFailure, `read config ${file}: ${(err as Error).message}`);
    }
    raw = parseConfigText(text, file);
  }
  for (const [envKey, key] of Object.entries(ENV_KEYS)) {
    const value = env[envKey];
    if (value) raw[key] = value;
  }
  Object.assign(raw, flagOverrides);
  if (typeof raw.cluster === 'object' && raw.cluster !== null && !Array.isArray(raw.cluster)) {
    const cluster: Record<string, unknown> = { ...raw.cluster };
    // The DaemonSet passes the node's name through the downward API; it wins over the file.
    if (env.NODE_NAME) cluster.nodeName = env.NODE_NAME;
    // In a pod of a cluster, with no static list, the peers come from the cluster's Node objects.
    const noPeers = !Array.isArray(cluster.peers) || cluster.peers.length === 0;
    if (
      env.KUBERNETES_SERVICE_HOST &&
      noPeers &&
      cluster.kubernetes === undefined &&
      cluster.routing !== undefined &&
      cluster.routing !== 'none'
    ) {
      cluster.kubernetes = {};
    }
    raw.cluster = cluster;
  }
  return { config: validateConfig(raw, file ?? '(no file)'), ...(file ? { file } : {}) };
}

function parseConfigText(text: string, file: string): Record<string, unknown> {
  let doc: unknown;
  try {
    doc = /\.ya?ml$/i.test(file) ? parseYaml(text) : JSON.parse(text);
  } catch (err) {
    throw new CniError(Code.DecodeFailure, `parse config ${file}: ${(err as Error).message}`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw new CniError(Code.InvalidConfig, `config ${file}: (root): expected an object`);
  }
  return { ...doc };
}

/** Validates a config object; throws InvalidConfig naming `source` and the field. */
export function validateConfig(raw: unknown, source: string): FerrydConfig {
  const config = parseAs(FerrydConfigSchema, raw, Code.InvalidConfig, `config ${source}`);
  const problem = crossCheck(config);
  if (problem) throw new CniError(Code.InvalidConfig, `config ${source}: ${problem}`);
  return config;
}

/**
 * What zod cannot see field by field: unique names, families in the right slot, ranges and exclusions
 * inside their subnets and leaving something to hand out, and no two networks sharing addresses (each
 * would hand out the other's).
 */
function crossCheck(config: FerrydConfig): string | undefined {
  const seen = new Set<string>();
  const subnets: { where: string; text: string; cidr: Cidr; isRange: boolean }[] = [];
  for (const [i, net] of config.networks.entries()) {
    if (seen.has(net.name)) return `networks[${i}].name: "${net.name}" is configured twice`;
    seen.add(net.name);
    if (net.infraNIC && !net.ipv4 && !net.ipv6) return `networks[${i}]: needs ipv4, ipv6 or both`;
    if (!net.infraNIC && net.mtu !== undefined) {
      return `networks[${i}].mtu: a network without InfraNIC has no veth; its devices keep their own MTU`;
    }
    for (const fam of [4, 6] as const) {
      const pool = fam === 4 ? net.ipv4 : net.ipv6;
      if (!pool) continue;
      const where = `networks[${i}].ipv${fam}`;
      let subnet: ReturnType<typeof parseCidr>;
      try {
        subnet = parseCidr(pool.subnet);
      } catch (err) {
        return `${where}.subnet: ${(err as Error).message}`;
      }
      if (subnet.family !== fam) return `${where}.subnet: "${pool.subnet}" is not an IPv${fam} subnet`;
      if (subnet.bits - subnet.prefix < 2) return `${where}.subnet: "${pool.subnet}" is too small for a pool`;
      const clash = subnets.find((o) => overlaps(o.cidr, subnet));
      if (clash) return `${where}.subnet: "${pool.subnet}" overlaps ${clash.where}.subnet "${clash.text}"`;
      subnets.push({ where, text: pool.subnet, cidr: subnet, isRange: pool.blocks !== undefined });
      const blocks = blocksProblem(pool, subnet, fam, config.cluster);
      if (blocks) return `${where}.${blocks}`;
      for (const [j, e] of pool.exclude.entries()) {
        const problem = exclusionProblem(e, subnet, fam);
        if (problem) return `${where}.exclude[${j}]: "${e}" ${problem}`;
      }
      for (const key of ['rangeStart', 'rangeEnd'] as const) {
        const a = pool[key];
        if (a && (familyOf(a) !== fam || !contains(subnet, toBigInt(a)))) {
          return `${where}.${key}: "${a}" is not inside ${pool.subnet}`;
        }
      }
      if (pool.rangeStart && pool.rangeEnd && toBigInt(pool.rangeStart) > toBigInt(pool.rangeEnd)) {
        return `${where}.rangeStart: "${pool.rangeStart}" is after rangeEnd "${pool.rangeEnd}"`;
      }
      for (const [j, r] of pool.routes.entries()) {
        if (familyOf(r.dst) !== fam) return `${where}.routes[${j}].dst: "${r.dst}" is not IPv${fam}`;
      }
      const problem = gatewayProblem(net.infraNIC, pool, subnet, fam);
      if (problem) return `${where}.${problem}`;
    }
    // A range hands out nothing before it holds blocks: what counts is what all of them would give.
    const empty = poolSpecsOf(net).find((spec) => (spec.blocks ? withBlocks(spec, [spec.subnet]) : spec).size === 0n);
    if (empty)
      return `networks[${i}].ipv${empty.family}.exclude: covers the whole range; no address is left to hand out`;
  }
  for (const [i, dev] of config.delegatedDevices.entries()) {
    const given = [
      ...(dev.mac ? ['mac'] : []),
      ...(dev.namePattern ? ['namePattern'] : []),
      ...DEVICE_SELECTORS.filter((k) => dev[k] !== undefined),
    ];
    if (given.length === 0)
      return `delegatedDevices[${i}]: needs mac, namePattern or selectors (${DEVICE_SELECTORS.join(', ')})`;
    if ((dev.mac || dev.namePattern) && given.length > 1) {
      return `delegatedDevices[${i}]: ${given.join(' and ')} are alternatives: give mac, namePattern or selectors`;
    }
    if (dev.nicType === 'BackendNIC') {
      return `delegatedDevices[${i}].nicType: BackendNIC (RDMA/InfiniBand) is not supported; only DelegatedNIC devices can be delegated`;
    }
    if (dev.namePattern) {
      try {
        new RegExp(dev.namePattern);
      } catch (err) {
        return `delegatedDevices[${i}].namePattern: ${(err as Error).message}`;
      }
    }
  }
  return (
    tenancyProblem(config, subnets) ??
    deviceKindProblem(config.delegatedDevices) ??
    devicePluginProblem(config) ??
    listenerProblem(config) ??
    (config.cluster
      ? clusterProblem(
          config.cluster,
          // A range is the cluster's, not this node's: its own pod CIDRs are the blocks it holds.
          subnets.filter((s) => !s.isRange),
        )
      : undefined)
  );
}

/**
 * A range split into blocks: blocks longer than the range and holding a few addresses, free counts that
 * converge (a claim adds one block: below maxFree afterwards; a release takes one: above minFree), and the
 * Kubernetes API to claim them from. rangeStart/rangeEnd would cut blocks apart: `exclude` says the same.
 */
function blocksProblem(
  pool: PoolConfig,
  subnet: Cidr,
  fam: 4 | 6,
  cluster: ClusterConfig | undefined,
): string | undefined {
  const { blocks } = pool;
  if (!blocks) return undefined;
  const prefix = blocks.prefixLength ?? DEFAULT_BLOCK_PREFIX[fam];
  if (prefix <= subnet.prefix || prefix > subnet.bits - 2) {
    return `blocks.prefixLength: /${prefix} must be longer than the range's /${subnet.prefix} and at most /${subnet.bits - 2}`;
  }
  for (const key of ['rangeStart', 'rangeEnd'] as const) {
    if (pool[key]) return `${key}: does not apply to a range split into blocks; use exclude`;
  }
  const size = 2 ** (subnet.bits - prefix);
  const minFree = blocks.minFree ?? Math.floor(size / 4);
  if (blocks.minFree !== undefined && blocks.minFree >= blocks.maxBlocks * size) {
    return `blocks.minFree: ${blocks.minFree} cannot be free in ${blocks.maxBlocks} blocks (maxBlocks) of ${size} addresses`;
  }
  if (blocks.maxFree !== undefined && blocks.maxFree < minFree + size) {
    return `blocks.maxFree: ${blocks.maxFree} is below minFree (${minFree}) plus one block (${size}): every claim would be followed by a release`;
  }
  if (!cluster?.kubernetes || !cluster.nodeName) {
    return 'blocks: needs cluster.kubernetes and cluster.nodeName (blocks are claimed through the Kubernetes API, by node)';
  }
  return undefined;
}

/**
 * A pool's gateway: a secondary network's router on the devices' segment, inside the subnet; an InfraNIC
 * network routes through its link-local gateway and has none. A secondary network's default route needs it.
 */
function gatewayProblem(infraNIC: boolean, pool: PoolConfig, subnet: Cidr, fam: 4 | 6): string | undefined {
  if (infraNIC) {
    return pool.gateway === undefined
      ? undefined
      : 'gateway: only a network without InfraNIC (`infraNIC: false`) has one; InfraNIC pods route through a link-local gateway';
  }
  if (pool.gateway !== undefined && (familyOf(pool.gateway) !== fam || !contains(subnet, toBigInt(pool.gateway)))) {
    return `gateway: "${pool.gateway}" is not inside ${pool.subnet}`;
  }
  if (pool.defaultRoute === true && pool.gateway === undefined)
    return 'defaultRoute: needs `gateway` on a network without InfraNIC';
  return undefined;
}

/**
 * The namespace bindings: every bound group is one the inventory has, bound once; static-address ranges
 * are valid prefixes outside every network's subnet (IPAM would hand the same address out) and outside
 * each other (an address must belong to one binding).
 */
function tenancyProblem(config: FerrydConfig, subnets: { where: string; cidr: Cidr }[]): string | undefined {
  const groups = new Set(config.delegatedDevices.map((d) => d.group));
  const bound = new Set<string>();
  for (const [i, b] of config.tenancy.deviceGroups.entries()) {
    const where = `tenancy.deviceGroups[${i}].group`;
    if (!groups.has(b.group)) return `${where}: "${b.group}" is not a group of delegatedDevices`;
    if (bound.has(b.group)) return `${where}: "${b.group}" is bound twice; list all its namespaces in one entry`;
    bound.add(b.group);
  }
  const ranges: { where: string; cidr: Cidr }[] = [];
  for (const [i, b] of config.tenancy.staticAddresses.entries()) {
    for (const [j, text] of b.ranges.entries()) {
      const where = `tenancy.staticAddresses[${i}].ranges[${j}]`;
      let cidr: Cidr;
      try {
        cidr = parseCidr(text);
      } catch (err) {
        return `${where}: ${(err as Error).message}`;
      }
      const clash = [...subnets, ...ranges].find((o) => overlaps(o.cidr, cidr));
      if (clash) return `${where}: "${text}" overlaps ${clash.where}`;
      ranges.push({ where, cidr });
    }
  }
  return undefined;
}

/**
 * Served groups: groups of the inventory, each a name the kubelet takes as the name part of an extended
 * resource (`ferry.dev/<group>`: a qualified name, at most 63 characters, alphanumeric at both ends).
 */
function devicePluginProblem({ devicePlugin, delegatedDevices }: FerrydConfig): string | undefined {
  if (!devicePlugin) return undefined;
  const groups = new Set(delegatedDevices.map((d) => d.group));
  if (!devicePlugin.groups && groups.size === 0) {
    return 'devicePlugin: delegatedDevices has no group to serve';
  }
  const served = devicePlugin.groups ?? [...groups];
  for (const [i, group] of served.entries()) {
    const where = devicePlugin.groups ? `devicePlugin.groups[${i}]` : 'delegatedDevices: group';
    if (!groups.has(group)) return `${where}: "${group}" is not a group of delegatedDevices`;
    if (!RESOURCE_NAME.test(group)) {
      return `${where}: "${group}" cannot be a resource name ferry.dev/${group} (at most 63 characters, a letter or digit at both ends)`;
    }
  }
  const unserved = devicePlugin.preferSamePf.findIndex((g) => !served.includes(g));
  if (unserved >= 0) {
    return `devicePlugin.preferSamePf[${unserved}]: "${devicePlugin.preferSamePf[unserved]}" is not a served group`;
  }
  return undefined;
}

const RESOURCE_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

/** Two listeners on one port: the second could not bind, and ferryd would fail after its start-up work. */
function listenerProblem({ tcp, metrics }: FerrydConfig): string | undefined {
  if (tcp && metrics && metrics.port !== 0 && metrics.port === tcp.port) {
    return `metrics.port: ${metrics.port} is also tcp.port (the operator listener)`;
  }
  return undefined;
}

/**
 * The cluster section: a node name when anything is routed or watched, peers named once, and pod CIDRs
 * that are valid and owned by one node only (two owners would each get the other's traffic).
 */
function clusterProblem(cluster: ClusterConfig, own: { where: string; cidr: Cidr }[]): string | undefined {
  if ((cluster.routing !== 'none' || cluster.kubernetes) && !cluster.nodeName) {
    return 'cluster.nodeName: required (or the NODE_NAME environment variable) when routing is not "none" or peers come from Kubernetes';
  }
  if (cluster.kubernetes && cluster.peers.length > 0) {
    return 'cluster.peers: give either a static peer list or kubernetes, not both';
  }
  const owned: { where: string; cidr: Cidr }[] = [];
  const cidrProblem = (where: string, text: string): string | undefined => {
    try {
      owned.push({ where, cidr: parseCidr(text) });
    } catch (err) {
      return `${where}: ${(err as Error).message}`;
    }
    return undefined;
  };
  for (const [i, c] of cluster.clusterCIDRs.entries()) {
    try {
      parseCidr(c);
    } catch (err) {
      return `cluster.clusterCIDRs[${i}]: ${(err as Error).message}`;
    }
  }
  const mine = cluster.podCIDRs
    ? cluster.podCIDRs.map((text, i) => ({ where: `cluster.podCIDRs[${i}]`, text }))
    : own.map((o) => ({ where: o.where, text: formatCidr(o.cidr) }));
  for (const m of mine) {
    const problem = cidrProblem(m.where, m.text);
    if (problem) return problem;
  }
  const names = new Set<string>();
  for (const [i, peer] of cluster.peers.entries()) {
    if (names.has(peer.name)) return `cluster.peers[${i}].name: "${peer.name}" is listed twice`;
    names.add(peer.name);
    // The same list may be handed to every node: this node's own entry is skipped, not checked.
    if (peer.name === cluster.nodeName) continue;
    for (const [j, text] of peer.podCIDRs.entries()) {
      const where = `cluster.peers[${i}].podCIDRs[${j}]`;
      const before = owned.length;
      const problem = cidrProblem(where, text);
      if (problem) return problem;
      const added = owned[before];
      const clash = added && owned.slice(0, before).find((o) => overlaps(o.cidr, added.cidr));
      if (clash) return `${where}: "${text}" overlaps ${clash.where}`;
    }
  }
  return undefined;
}

function exclusionProblem(e: string, subnet: Cidr, fam: 4 | 6): string | undefined {
  let c: Cidr;
  try {
    c = parseExclusion(e);
  } catch (err) {
    return (err as Error).message.replace(`"${e}" `, '');
  }
  if (c.family !== fam) return `is not IPv${fam}`;
  if (!contains(subnet, c.base) || !contains(subnet, lastOf(c))) return 'is not inside the subnet';
  return undefined;
}
