/**
 * ferryd's configuration file (DESIGN.md "Entry points"), as a schema: ferryd validates its config with
 * it, `ferryctl install` validates the config it renders, and docs/configuration.md is generated from it.
 * Field descriptions are the reference's text.
 */
import * as z from 'zod/mini';
import { NetworkNameSchema } from '../cni/names';
import { DnsSchema } from '../cni/result';
import { NicTypeSchema } from '../nic';

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
