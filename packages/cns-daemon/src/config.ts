/**
 * ferryd's configuration: a JSON or YAML file (DESIGN.md "Entry points"), then FERRY_* environment
 * variables, then flags, each overriding the one before. Everything is validated by zod with errors
 * that name the field; pools are checked against their subnet here so a bad range never reaches IPAM.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { NetworkNameSchema } from '@ferry/shared-types/cni/names';
import { DnsSchema } from '@ferry/shared-types/cni/result';
import { CniError, Code } from '@ferry/shared-types/errors';
import { NicTypeSchema } from '@ferry/shared-types/nic';
import { describePath } from '@ferry/shared-types/parse';
import { parse as parseYaml } from 'yaml';
import * as z from 'zod/mini';
import { contains, familyOf, parseCidr, toBigInt } from './ipam/cidr';

const AbsolutePath = z.string().check(z.regex(/^\//, { message: 'must be an absolute path' }));
const Ip = z.union([z.ipv4(), z.ipv6()]);
const Cidr = z.union([z.cidrv4(), z.cidrv6()]);

const RouteConfigSchema = z.strictObject({ dst: Cidr, gw: z.optional(Ip) });

/** One address family of a network's pool. */
export const PoolConfigSchema = z.strictObject({
  /** The pool's subnet; host bits must be zero. */
  subnet: Cidr,
  /** First allocatable address (default: the subnet's second address). */
  rangeStart: z.optional(Ip),
  /** Last allocatable address (default: the subnet's last address, minus broadcast for IPv4). */
  rangeEnd: z.optional(Ip),
  /** Addresses or CIDRs never handed out. */
  exclude: z._default(z.array(z.union([Ip, Cidr])), []),
  /** Extra routes for pods, next to the default route via the link-local gateway. */
  routes: z._default(z.array(RouteConfigSchema), []),
  /** Install the default route in pods (turn off when `routes` says everything). */
  defaultRoute: z._default(z.boolean(), true),
});
export type PoolConfig = z.infer<typeof PoolConfigSchema>;

export const NetworkConfigSchema = z.strictObject({
  name: NetworkNameSchema,
  ipv4: z.optional(PoolConfigSchema),
  ipv6: z.optional(PoolConfigSchema),
  /** MTU for pod interfaces (default: the kernel's, 1500). */
  mtu: z.optional(z.number().check(z.int(), z.minimum(68), z.maximum(65535))),
  /** DNS settings handed to pods in the ADD result. */
  dns: z.optional(DnsSchema),
});
export type NetworkConfig = z.infer<typeof NetworkConfigSchema>;

export const DelegatedDeviceConfigSchema = z.strictObject({
  /** The device's permanent MAC: how it is found, whatever its name. */
  mac: z.optional(z.mac()),
  /** Or a regular expression over host interface names (evaluated on the node at start and each reconcile). */
  namePattern: z.optional(z.string()),
  /** The group a network config asks for (`delegatedNICs.group`). */
  group: NetworkNameSchema,
  /** DelegatedNIC (the default). BackendNIC (RDMA/InfiniBand) is recognised and refused. */
  nicType: z._default(NicTypeSchema, 'DelegatedNIC'),
});

export const TcpListenerConfigSchema = z.strictObject({
  host: z._default(z.string(), '127.0.0.1'),
  port: z.number().check(z.int(), z.minimum(0), z.maximum(65535)),
  /** File holding the read-only bearer token. */
  tokenFile: AbsolutePath,
  /** File holding the admin token (may change state); without it the listener is read-only. */
  adminTokenFile: z.optional(AbsolutePath),
});

export const FerrydConfigSchema = z.strictObject({
  socket: z._default(AbsolutePath, '/run/ferry/ferryd.sock'),
  database: z._default(AbsolutePath, '/var/lib/ferry/ferry.db'),
  deleteQueue: z._default(AbsolutePath, '/var/lib/ferry/delete-queue'),
  logLevel: z._default(z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']), 'info'),
  /** Seconds a released address waits before it can be handed out again. */
  cooldownSec: z._default(z.number().check(z.minimum(0), z.maximum(86_400)), 30),
  networks: z.array(NetworkConfigSchema).check(z.minLength(1)),
  delegatedDevices: z._default(z.array(DelegatedDeviceConfigSchema), []),
  tcp: z.optional(TcpListenerConfigSchema),
  reconcile: z._default(
    z.strictObject({
      /** How often the reconciler runs. */
      intervalSec: z._default(z.number().check(z.minimum(0.05), z.maximum(3600)), 10),
      /** An endpoint whose netns has been gone this long is released. */
      staleGraceSec: z._default(z.number().check(z.minimum(0), z.maximum(86_400)), 60),
    }),
    { intervalSec: 10, staleGraceSec: 60 },
  ),
  /** Seconds SIGTERM waits for in-flight requests before closing anyway. */
  shutdownGraceSec: z._default(z.number().check(z.minimum(0), z.maximum(600)), 10),
});
export type FerrydConfig = z.infer<typeof FerrydConfigSchema>;

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
} as const;

/** Parses ferryd's argv (without node and script). Unknown flags are an InvalidConfig error. */
export function parseFlags(argv: readonly string[]): { config?: string; overrides: Record<string, string> } {
  const options = {
    config: { type: 'string', short: 'c' },
    socket: { type: 'string' },
    database: { type: 'string' },
    'delete-queue': { type: 'string' },
    'log-level': { type: 'string' },
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
  return { ...(v.config ? { config: v.config } : {}), overrides };
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
  const r = FerrydConfigSchema.safeParse(raw);
  if (!r.success) {
    const issue = r.error.issues[0];
    throw new CniError(
      Code.InvalidConfig,
      `config ${source}: ${issue ? describePath(issue.path) : '(root)'}: ${issue?.message ?? 'invalid'}`,
    );
  }
  const config = r.data;
  const problem = crossCheck(config);
  if (problem) throw new CniError(Code.InvalidConfig, `config ${source}: ${problem}`);
  return config;
}

/** What zod cannot see field by field: unique names, families in the right slot, ranges inside subnets. */
function crossCheck(config: FerrydConfig): string | undefined {
  const seen = new Set<string>();
  for (const [i, net] of config.networks.entries()) {
    if (seen.has(net.name)) return `networks[${i}].name: "${net.name}" is configured twice`;
    seen.add(net.name);
    if (!net.ipv4 && !net.ipv6) return `networks[${i}]: needs ipv4, ipv6 or both`;
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
    }
  }
  for (const [i, dev] of config.delegatedDevices.entries()) {
    if (!dev.mac && !dev.namePattern) return `delegatedDevices[${i}]: needs mac or namePattern`;
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
  return undefined;
}
