/**
 * ferryd's configuration file (DESIGN.md "Entry points"), as a schema: ferryd validates its config with
 * it, `ferryctl install` validates the config it renders, and docs/configuration.md is generated from it.
 * Field descriptions are the reference's text.
 */
import * as z from 'zod/mini';
import { DnsSchema } from '../cni/dns';
import { absolutePath, NetworkNameSchema } from '../cni/names';
import { doc } from '../doc';
import { NicTypeSchema } from '../nic';
import { DEFAULT_DELETE_QUEUE, DEFAULT_SOCKET } from './defaults';

const ip = () => z.union([z.ipv4(), z.ipv6()]);
const cidr = () => z.union([z.cidrv4(), z.cidrv6()]);

const RouteConfigSchema = z.strictObject({
  dst: doc(cidr(), "Destination prefix, in the pool's family."),
  gw: doc(z.optional(ip()), "Next hop; default: the pod's link-local gateway."),
});

/** One address family of a network's pool. */
export const PoolConfigSchema = z.strictObject({
  subnet: doc(cidr(), "The pool's subnet; host bits must be zero (10.244.1.0/24, fd00:10:244:1::/64)."),
  rangeStart: doc(z.optional(ip()), "First allocatable address. Default: the subnet's second address."),
  rangeEnd: doc(
    z.optional(ip()),
    "Last allocatable address. Default: the subnet's last address (IPv4: the one before broadcast).",
  ),
  exclude: doc(z._default(z.array(z.union([ip(), cidr()])), []), 'Addresses or CIDRs never handed out.'),
  routes: doc(
    z._default(z.array(RouteConfigSchema), []),
    'Extra routes installed in pods, next to the default route via the link-local gateway.',
  ),
  defaultRoute: doc(
    z._default(z.boolean(), true),
    'Install the default route in pods (turn it off when `routes` says everything).',
  ),
});
export type PoolConfig = z.infer<typeof PoolConfigSchema>;

export const NetworkConfigSchema = z.strictObject({
  name: doc(NetworkNameSchema.clone(), 'The network name; a conflist with this `name` uses this network.'),
  ipv4: doc(z.optional(PoolConfigSchema), 'The IPv4 pool.'),
  ipv6: doc(z.optional(PoolConfigSchema), 'The IPv6 pool (a /64 is fine: free addresses are not stored).'),
  mtu: doc(
    z.optional(z.number().check(z.int(), z.minimum(68), z.maximum(65535))),
    "MTU of pod interfaces. Default: the kernel's (1500); a conflist's `mtu` wins.",
  ),
  dns: doc(z.optional(DnsSchema), 'DNS settings handed to pods in the ADD result.'),
});
export type NetworkConfig = z.infer<typeof NetworkConfigSchema>;

export const DelegatedDeviceConfigSchema = z.strictObject({
  mac: doc(z.optional(z.mac()), "The device's MAC: how it is found whatever its name."),
  namePattern: doc(
    z.optional(z.string()),
    "Or a regular expression over the node's interface names; a match joins the inventory under the name it has then.",
  ),
  group: doc(NetworkNameSchema.clone(), 'The group a network config asks for (`delegatedNICs.group`).'),
  nicType: doc(
    z._default(NicTypeSchema.clone(), 'DelegatedNIC'),
    'DelegatedNIC. BackendNIC (RDMA/InfiniBand) is recognised and refused.',
  ),
});

export const TcpListenerConfigSchema = z.strictObject({
  host: doc(z._default(z.string(), '127.0.0.1'), 'Address the operator listener binds to.'),
  port: doc(z.number().check(z.int(), z.minimum(0), z.maximum(65535)), 'Port of the operator listener.'),
  tokenFile: doc(absolutePath(), 'File holding the read-only bearer token (at least 16 characters).'),
  adminTokenFile: doc(
    z.optional(absolutePath()),
    'File holding the admin token, which may change state; without it the listener is read-only.',
  ),
});

export const FerrydConfigSchema = z.strictObject({
  socket: doc(
    z._default(absolutePath(), DEFAULT_SOCKET),
    'Unix socket for the shim and operators (dir 0700, socket 0600).',
  ),
  database: doc(
    z._default(absolutePath(), '/var/lib/ferry/ferry.db'),
    'SQLite database (WAL); one ferryd per file, enforced by `<database>.lock`.',
  ),
  deleteQueue: doc(
    z._default(absolutePath(), DEFAULT_DELETE_QUEUE),
    "Where ferry-cni queues DELs while ferryd is unreachable; must be the conflist's `deleteQueue`.",
  ),
  logLevel: doc(
    z._default(z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']), 'info'),
    'pino log level (JSON lines on stdout).',
  ),
  cooldownSec: doc(
    z._default(z.number().check(z.minimum(0), z.maximum(86_400)), 30),
    'Seconds a released address waits before it can be handed out again.',
  ),
  networks: doc(z.array(NetworkConfigSchema).check(z.minLength(1)), 'The networks and their pools.'),
  delegatedDevices: doc(
    z._default(z.array(DelegatedDeviceConfigSchema), []),
    'Host devices that may be delegated to pods (DelegatedNICs).',
  ),
  tcp: doc(
    z.optional(TcpListenerConfigSchema),
    'Optional TCP listener for operators (off by default), behind bearer tokens.',
  ),
  reconcile: doc(
    z._default(
      z.strictObject({
        intervalSec: doc(
          z._default(z.number().check(z.minimum(0.05), z.maximum(3600)), 10),
          'How often the reconciler runs (queue rescan, cooldowns, stale endpoints, devices).',
        ),
        staleGraceSec: doc(
          z._default(z.number().check(z.minimum(0), z.maximum(86_400)), 60),
          'An endpoint whose netns has been gone this long is released.',
        ),
      }),
      { intervalSec: 10, staleGraceSec: 60 },
    ),
    'The reconciler.',
  ),
  shutdownGraceSec: doc(
    z._default(z.number().check(z.minimum(0), z.maximum(600)), 10),
    'Seconds SIGTERM waits for in-flight requests before closing anyway.',
  ),
});
export type FerrydConfig = z.infer<typeof FerrydConfigSchema>;
