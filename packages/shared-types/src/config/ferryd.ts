/**
 * ferryd's configuration file (docs/architecture.md "Entry points"), as a schema: ferryd validates its config with
 * it, `ferryctl install` validates the config it renders, and docs/configuration.md is generated from it.
 * Field descriptions are the reference's text.
 */
import * as z from 'zod/mini';
import { PciAddressSchema } from '../api/common';
import { DnsSchema } from '../cni/dns';
import { absolutePath, NetworkNameSchema } from '../cni/names';
import { doc } from '../doc';
import { DEVICE_INFO_DIR } from '../kube/device-info';
import { NicTypeSchema } from '../nic';
import { DEFAULT_COMMIT_JOURNAL, DEFAULT_DAEMON_TIMEOUTS, DEFAULT_DELETE_QUEUE, DEFAULT_SOCKET } from './defaults';

const ip = () => z.union([z.ipv4(), z.ipv6()]);
const cidr = () => z.union([z.cidrv4(), z.cidrv6()]);

const RouteConfigSchema = z.strictObject({
  dst: doc(cidr(), "Destination prefix, in the pool's family."),
  gw: doc(z.optional(ip()), "Next hop; default: the pod's link-local gateway."),
});

/** A block's default prefix length per family: Calico's (64 addresses either way). */
export const DEFAULT_BLOCK_PREFIX = { 4: 26, 6: 122 } as const;
/** How long an empty block is kept before it goes back to the range, by default. */
export const DEFAULT_BLOCK_RELEASE_AFTER_SEC = 300;
/** How often the IPAM reclaimer looks over the cluster, by default. */
export const DEFAULT_RECLAIM_SEC = 30;
/** The most blocks of one pool a node holds, by default (Calico's maxBlocksPerHost). */
export const DEFAULT_MAX_BLOCKS = 20;

/**
 * Cluster IPAM for one family of a network (docs/architecture.md "Cluster IPAM"): the pool's `subnet` is
 * the cluster-wide range, and the node holds blocks of it through IPBlock objects in the Kubernetes API,
 * claimed ahead of demand as CNS scales its pool: in batches, between a minimum and a maximum free count.
 */
export const BlocksConfigSchema = z.strictObject({
  prefixLength: doc(
    z.optional(z.number().check(z.int(), z.minimum(1), z.maximum(126))),
    `The prefix length of a block, longer than the range's. Default: /${DEFAULT_BLOCK_PREFIX[4]} for IPv4, /${DEFAULT_BLOCK_PREFIX[6]} for IPv6 (64 addresses, as Calico).`,
  ),
  minFree: doc(
    z.optional(z.number().check(z.int(), z.minimum(0))),
    "Claim another block when fewer addresses than this are free in the node's blocks (pods scheduled onto the node and not yet added count as used). Default: a quarter of a block.",
  ),
  maxFree: doc(
    z.optional(z.number().check(z.int(), z.minimum(0))),
    'Give an empty block back when more addresses than this are free; at least `minFree` plus one block, so a claim never triggers a release and a release never a claim. Default: `minFree` plus one block.',
  ),
  releaseAfterSec: doc(
    z._default(z.number().check(z.minimum(0), z.maximum(86_400)), DEFAULT_BLOCK_RELEASE_AFTER_SEC),
    'How long a block stays empty before it may go back to the range (while the range is exhausted and another node may need it: as soon as it has been held 30 s, or this long if shorter).',
  ),
  maxBlocks: doc(
    z._default(z.number().check(z.int(), z.minimum(1), z.maximum(65_536)), DEFAULT_MAX_BLOCKS),
    'The most blocks of this pool the node holds.',
  ),
  waitMs: doc(
    z._default(z.number().check(z.int(), z.minimum(0), z.maximum(DEFAULT_DAEMON_TIMEOUTS.requestMs - 2000)), 3000),
    "How long an ADD that finds the node's blocks full waits for the block being claimed before it fails with code 11 (try again later). Keep it, with `cluster.kubernetes.pods.lookupTimeoutMs`, below the conflist's `daemonTimeouts.requestMs`.",
  ),
});
export type BlocksConfig = z.infer<typeof BlocksConfigSchema>;

/** One address family of a network's pool. */
export const PoolConfigSchema = z.strictObject({
  subnet: doc(
    cidr(),
    "The pool's subnet; host bits must be zero (10.244.1.0/24, fd00:10:244:1::/64). With `blocks`, the cluster-wide range the node's blocks come from.",
  ),
  blocks: doc(
    z.optional(BlocksConfigSchema),
    "Cluster IPAM: `subnet` is the whole cluster's range, split into blocks the nodes claim through the Kubernetes API (needs `cluster.kubernetes` and `cluster.nodeName`). Without it, `subnet` is this node's alone (a fixed subnet, or `spec.podCIDRs` rendered by `ferryctl install`).",
  ),
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
    z.optional(z.boolean()),
    'Install the default route in pods (turn it off when `routes` says everything). Default: true on an InfraNIC network; false on a secondary network (`infraNIC: false`), whose pods keep the default route of their primary network (true there needs `gateway`).',
  ),
  gateway: doc(
    z.optional(ip()),
    "Secondary networks (`infraNIC: false`) only: the router on the devices' segment, given to pods as their gateway and the next hop of `routes` without `gw`; never handed out. InfraNIC networks route every pod through a link-local gateway instead.",
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
  infraNIC: doc(
    z._default(z.boolean(), true),
    "Every attachment gets an InfraNIC (a routed veth with a pool address). `false`: a secondary network (Ferry as a Multus delegate, in place of host-device or sriov-cni): no veth; the attachment is one delegated device under CNI_IFNAME, chosen by `runtimeConfig.deviceID` (a PCI address), the pod's `ferry.dev/nics` entry for this network, or the conflist's `delegatedNICs` (count 1), and addressed from this network's pools (with the subnet's prefix length) when it has any, by the pod's static addresses, or not at all.",
  ),
});
export type NetworkConfig = z.infer<typeof NetworkConfigSchema>;

/** `ens1f0`, or with VF indexes after `#`: `ens1f0#0-3`, `ens1f0#0,2,5-7` (the SR-IOV network device plugin's form). */
export const PfNameSelectorSchema = z.string().check(
  z.regex(/^[^\s#/]{1,15}(#\d+(-\d+)?(,\d+(-\d+)?)*)?$/, {
    message: 'not a PF name with an optional VF range, like ens1f0 or ens1f0#0-3',
  }),
);

const HexIdSchema = z
  .string()
  .check(z.regex(/^[0-9a-fA-F]{4}$/, { message: 'not a 4-digit hex ID without 0x, like 8086' }));

const selectorList = <T extends z.ZodMiniType>(item: T) => z.optional(z.array(item).check(z.minLength(1)));

export const DelegatedDeviceConfigSchema = z.strictObject({
  mac: doc(z.optional(z.mac()), "The device's MAC: how it is found whatever its name."),
  namePattern: doc(
    z.optional(z.string()),
    "Or a regular expression over the node's interface names; a match joins the inventory under the name it has then.",
  ),
  vendors: doc(
    selectorList(HexIdSchema),
    'Or selectors, as the SR-IOV network device plugin has them (each one given must match; within one, any item): PCI vendor IDs from sysfs `vendor` (`8086`).',
  ),
  devices: doc(selectorList(HexIdSchema), 'PCI device IDs from sysfs `device` (`154c`, a VF of an Intel X710).'),
  drivers: doc(
    selectorList(z.string().check(z.minLength(1))),
    'Bound drivers, the target of sysfs `driver` (`iavf`, `mlx5_core`).',
  ),
  pfNames: doc(
    selectorList(PfNameSelectorSchema),
    "The netdev name of the device's PF (a PF's own), optionally with the VFs' indexes: `ens1f0#0-3` (a range selects VFs only).",
  ),
  rootDevices: doc(selectorList(PciAddressSchema), "The PCI address of the device's PF (a PF's own): `0000:3b:00.0`."),
  linkTypes: doc(
    selectorList(z.string().check(z.minLength(1))),
    "The netdev's link type from sysfs `net/<name>/type` (`ether`, `infiniband`).",
  ),
  group: doc(
    NetworkNameSchema.clone(),
    "The group a network config (`delegatedNICs.group`) or a pod's `ferry.dev/nics` asks for.",
  ),
  nicType: doc(
    z._default(NicTypeSchema.clone(), 'DelegatedNIC'),
    'DelegatedNIC. BackendNIC (RDMA/InfiniBand) is recognised and refused.',
  ),
});
export type DelegatedDeviceConfig = z.infer<typeof DelegatedDeviceConfigSchema>;

/** The selector keys of a `delegatedDevices` entry, in the order messages list them. */
export const DEVICE_SELECTORS = ['vendors', 'devices', 'drivers', 'pfNames', 'rootDevices', 'linkTypes'] as const;

/** A Kubernetes namespace name (RFC 1123 label), or `*`: every namespace. */
const NamespaceSchema = z
  .string()
  .check(z.regex(/^(\*|[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)$/, { message: 'not a namespace name (or "*")' }));

export const GroupBindingSchema = z.strictObject({
  group: doc(NetworkNameSchema.clone(), 'A device group of `delegatedDevices`.'),
  namespaces: doc(
    z.array(NamespaceSchema).check(z.minLength(1)),
    "The namespaces whose pods may have the group's devices (`*`: every namespace).",
  ),
});

export const AddressBindingSchema = z.strictObject({
  namespaces: doc(
    z.array(NamespaceSchema).check(z.minLength(1)),
    'The namespaces whose pods may give their delegated NICs static addresses inside `ranges` (`*`: every namespace).',
  ),
  ranges: doc(
    z.array(cidr()).check(z.minLength(1)),
    "Prefixes a pod's `ferry.dev/nics` `addresses` must lie in; never inside a network's subnet, and no two bindings' ranges overlap.",
  ),
});

export const TenancyConfigSchema = z.strictObject({
  deviceGroups: doc(
    z._default(z.array(GroupBindingSchema), []),
    "Which namespaces may have which device groups. A pod's `ferry.dev/nics` may ask (by group, mac or pciAddress) only for devices of a group bound to its namespace; a bound group's devices go to pods of its namespaces only, whatever asks (the annotation, a conflist's `delegatedNICs`, `runtimeConfig.deviceID`, a reservation). A group bound to none is not open to annotations, and is given as before by conflists and reservations.",
  ),
  staticAddresses: doc(
    z._default(z.array(AddressBindingSchema), []),
    "Which namespaces may give their pods' delegated NICs static addresses (`ferry.dev/nics` `addresses`), and inside which ranges. None bound: every static address in an annotation is refused.",
  ),
});
export type TenancyConfig = z.infer<typeof TenancyConfigSchema>;

export const TcpListenerConfigSchema = z.strictObject({
  host: doc(z._default(z.string(), '127.0.0.1'), 'Address the operator listener binds to.'),
  port: doc(z.number().check(z.int(), z.minimum(0), z.maximum(65535)), 'Port of the operator listener.'),
  tokenFile: doc(absolutePath(), 'File holding the read-only bearer token (at least 16 characters).'),
  adminTokenFile: doc(
    z.optional(absolutePath()),
    'File holding the admin token, which may change state; without it the listener is read-only.',
  ),
});

/** The port deploy/ scrapes (the ferryd container's `metrics` port and its `prometheus.io/port`). */
export const DEFAULT_METRICS_PORT = 9479;

/**
 * The scrape listener: `/metrics` and the probes (`/healthz`, `/readyz`) over plain HTTP, nothing else,
 * so a node port Prometheus reaches opens neither the shim's routes nor the operator API.
 */
export const MetricsListenerConfigSchema = z.strictObject({
  host: doc(
    z._default(z.string().check(z.minLength(1)), '0.0.0.0'),
    'Address the scrape listener binds to: every IPv4 address of the node by default (`::` for IPv6 and IPv4).',
  ),
  port: doc(
    z._default(z.number().check(z.int(), z.minimum(0), z.maximum(65535)), DEFAULT_METRICS_PORT),
    "Port of the scrape listener (deploy/'s `metrics` container port and `prometheus.io/port`).",
  ),
});

/** Another node, as the static list in `cluster.peers` gives it (the Kubernetes source gives the same). */
export const PeerConfigSchema = z.strictObject({
  name: doc(z.string().check(z.minLength(1), z.maxLength(253)), "The node's name (its Kubernetes Node name)."),
  addresses: doc(
    z.array(ip()).check(z.minLength(1)),
    "The node's underlay addresses (InternalIPs); one per family is used, for pod CIDRs of that family.",
  ),
  podCIDRs: doc(z.array(cidr()).check(z.minLength(1)), 'The pod CIDRs the node owns (`spec.podCIDRs`).'),
});
export type PeerConfig = z.infer<typeof PeerConfigSchema>;

export const ClusterRoutingSchema = z.enum(['host-gw', 'vxlan', 'none']);
export type ClusterRouting = z.infer<typeof ClusterRoutingSchema>;

export const VxlanConfigSchema = z.strictObject({
  vni: doc(z._default(z.number().check(z.int(), z.minimum(1), z.maximum(16_777_215)), 1), 'VXLAN network identifier.'),
  port: doc(
    z._default(z.number().check(z.int(), z.minimum(1), z.maximum(65_535)), 8472),
    'UDP port of the VXLAN underlay.',
  ),
  device: doc(
    z._default(z.string().check(z.regex(/^[A-Za-z0-9_.-]{1,15}$/)), 'ferry.1'),
    'Name of the VXLAN device ferryd owns on the node.',
  ),
  mtu: doc(
    z.optional(z.number().check(z.int(), z.minimum(1280), z.maximum(65_535))),
    "MTU of the VXLAN device. Default: the underlay device's MTU minus 50 (IPv4 underlay) or 70 (IPv6).",
  ),
});
export type VxlanConfig = z.infer<typeof VxlanConfigSchema>;

/**
 * The longest an ADD may wait for a pod the cache does not hold: inside the shim's default request
 * deadline, with room for the rest of the allocation, so the shim hears code 11 rather than a timeout.
 */
export const MAX_POD_LOOKUP_TIMEOUT_MS = DEFAULT_DAEMON_TIMEOUTS.requestMs - 2000;

export const PodWatchConfigSchema = z.strictObject({
  lookupTimeoutMs: doc(
    z._default(z.number().check(z.int(), z.minimum(100), z.maximum(MAX_POD_LOOKUP_TIMEOUT_MS)), 3000),
    "How long a question about a pod the watch has not delivered yet (a direct GET, retried while the API server is away) may take before it fails with code 11 (try again later). Keep it below the conflist's `daemonTimeouts.requestMs`.",
  ),
  networkStatus: doc(
    z._default(z.boolean(), true),
    "Write what each pod got into its `k8s.v1.cni.cncf.io/network-status` annotation (Ferry's entries only, from ferryd's records). Turn it off where Multus writes that annotation.",
  ),
});
export type PodWatchConfig = z.infer<typeof PodWatchConfigSchema>;

export const ClusterConfigSchema = z.strictObject({
  nodeName: doc(
    z.optional(z.string().check(z.minLength(1), z.maxLength(253))),
    "This node's name; the `NODE_NAME` environment variable wins. Required unless routing is `none`.",
  ),
  routing: doc(
    z._default(ClusterRoutingSchema.clone(), 'none'),
    '`host-gw`: a route per remote pod CIDR via the node (nodes on one link); `vxlan`: an overlay (nodes across L3); `none`: the fabric routes pod addresses.',
  ),
  clusterCIDRs: doc(
    z._default(z.array(cidr()), []),
    'Pod and service CIDRs of the whole cluster: traffic to them is never masqueraded.',
  ),
  masquerade: doc(
    z._default(z.boolean(), false),
    "Masquerade pod traffic to destinations outside `clusterCIDRs` to the node's address.",
  ),
  podCIDRs: doc(
    z.optional(z.array(cidr()).check(z.minLength(1))),
    "This node's pod CIDRs (the VXLAN device takes its addresses from them). Default: the networks' subnets.",
  ),
  nodeAddresses: doc(
    z.optional(z.array(ip()).check(z.minLength(1))),
    "This node's underlay addresses (the VXLAN device's local end). Default: the source address of the route to the first peer.",
  ),
  peers: doc(
    z._default(z.array(PeerConfigSchema), []),
    'The static list of other nodes (clusters without Kubernetes, tests).',
  ),
  kubernetes: doc(
    z.optional(
      z.strictObject({
        kubeconfig: doc(
          z.optional(absolutePath()),
          'A kubeconfig for out-of-cluster use; without it the in-cluster service account is used.',
        ),
        pods: doc(
          z.optional(PodWatchConfigSchema),
          "Watch this node's pods (`spec.nodeName` = `nodeName`): their `ferry.dev/nics` annotation, and their `k8s.v1.cni.cncf.io/network-status`. Works with any `routing`, `none` included.",
        ),
      }),
    ),
    'Talk to the Kubernetes API: the peers come from a watch on Node objects (and, with `pods`, ferryd watches its pods). Implied in a pod (KUBERNETES_SERVICE_HOST set) when routing is not `none` and `peers` is empty.',
  ),
  vxlan: doc(
    z._default(VxlanConfigSchema, { vni: 1, port: 8472, device: 'ferry.1' }),
    'The VXLAN device (routing `vxlan`).',
  ),
  resyncSec: doc(
    z._default(z.number().check(z.minimum(1), z.maximum(86_400)), 60),
    'How often ferryd re-reads its routes and entries from the kernel and repairs what differs.',
  ),
  reclaimSec: doc(
    z._default(z.number().check(z.minimum(1), z.maximum(3600)), DEFAULT_RECLAIM_SEC),
    "Cluster IPAM: how often the ferryd that leads the reclaimer looks over the whole cluster for the blocks and static-address claims of nodes that are gone. A change to an IPBlock or IPClaim brings the next look sooner; a deleted node's last pod going does not (its blocks go back at the next look).",
  ),
});
export type ClusterConfig = z.infer<typeof ClusterConfigSchema>;

/** The kubelet's device plugin API, for delegated-device groups (docs/device-plugin.md). */
export const DevicePluginConfigSchema = z.strictObject({
  kubeletDir: doc(
    z._default(absolutePath(), '/var/lib/kubelet'),
    "The kubelet's directory: ferryd registers on `<kubeletDir>/device-plugins/kubelet.sock`, serves each resource on its own socket beside it (`ferry-<group>.sock`), and asks `<kubeletDir>/pod-resources/kubelet.sock` which devices the kubelet allocated to a pod.",
  ),
  groups: doc(
    z.optional(z.array(NetworkNameSchema.clone()).check(z.minLength(1))),
    "The device groups served as the resources `ferry.dev/<group>` (each a name Kubernetes takes: at most 63 characters, ending in a letter or digit). Default: every group of `delegatedDevices`. A served group's devices go only to the pods the kubelet allocated them to.",
  ),
  podResourcesTimeoutMs: doc(
    z._default(z.number().check(z.int(), z.minimum(100), z.maximum(MAX_POD_LOOKUP_TIMEOUT_MS)), 2000),
    "How long an ADD may wait for the kubelet's pod-resources answer before it fails with code 11 (try again later).",
  ),
  preferSamePf: doc(
    z._default(z.array(NetworkNameSchema.clone()), []),
    "Served groups whose preferred allocations (GetPreferredAllocation) also keep a pod's VFs on one PF where they can, after keeping them on one NUMA node (the SR-IOV device plugin's `allocatePolicy: packed` does it by taking VFs in PCI address order). Default: none; every served group keeps a pod's devices on one NUMA node where it can.",
  ),
  deviceInfoDir: doc(
    z._default(absolutePath(), DEVICE_INFO_DIR),
    "Where Allocate writes each allocated PCI device's device-info file (NPWG Device Information Specification 1.1.0), `<resource>-<PCI address>-device.json` with the resource's `/` as `-` (`ferry.dev-sriov-0000:3b:02.0-device.json`), which Multus copies into network-status; the file goes when the device is released (a DEL) and when ferryd stops.",
  ),
});
export type DevicePluginConfig = z.infer<typeof DevicePluginConfigSchema>;

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
  commitJournal: doc(
    z.optional(absolutePath()),
    `Where ferry-cni writes the commits of ADDs for ferryd to promote (one round trip per ADD instead of two); must be the conflist's \`commitJournal\`. Default: \`commit-journal\` next to \`deleteQueue\` (${DEFAULT_COMMIT_JOURNAL}).`,
  ),
  readyFile: doc(
    z.optional(absolutePath()),
    "A file ferryd writes (the inode of its socket) while it is ready and serves the socket, and removes when it hands over or stops. The DaemonSet's postStart hook (`ferryctl install --ready-file`) waits for it, and its HTTP probes start only after the hook, so during a surge a pod is probed (and ready) only once its own ferryd serves; `ferryctl health --ready --ready-file` checks it by hand. `--ready-file` overrides it.",
  ),
  bootIdPath: doc(
    z._default(absolutePath(), '/proc/sys/kernel/random/boot_id'),
    "The kernel's boot id; when it differs from the one ferryd last started under, every endpoint whose netns is gone is released at once, without grace or cooldown. `FERRY_BOOT_ID_PATH` overrides it.",
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
  tenancy: doc(
    z._default(TenancyConfigSchema, { deviceGroups: [], staticAddresses: [] }),
    'Who may ask for what through `ferry.dev/nics`: device groups and static-address ranges bound to namespaces (docs/pod-nics.md).',
  ),
  devicePlugin: doc(
    z.optional(DevicePluginConfigSchema),
    'Serve the delegated-device groups to the kubelet as resources `ferry.dev/<group>` (off by default): pods ask with `resources.limits`, the scheduler places them where a device is free, and an ADD gives a pod the devices the kubelet allocated to it.',
  ),
  sysfsRoot: doc(
    z._default(absolutePath(), '/sys'),
    'Where ferryd reads sysfs: a PCI address (`runtimeConfig.deviceID`, `pciAddress` in `ferry.dev/nics`) is the network device under `<sysfsRoot>/bus/pci/devices/<address>/net/`.',
  ),
  tcp: doc(
    z.optional(TcpListenerConfigSchema),
    'Optional TCP listener for operators (off by default), behind bearer tokens.',
  ),
  metrics: doc(
    z.optional(MetricsListenerConfigSchema),
    'Optional listener for Prometheus (off by default): `/metrics`, `/healthz` and `/readyz` only, without auth; the unix socket serves `/metrics` either way.',
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
        deviceGoneGraceSec: doc(
          z._default(z.number().check(z.minimum(0), z.maximum(30 * 86_400)), 300),
          'A device found by `namePattern` or a selector that has been off the node this long (and is held by no pod) leaves the inventory, and the capacity the device plugin reports; back on the node, it joins again. A `mac` entry keeps its device listed (as missing) while the entry is there.',
        ),
      }),
      { intervalSec: 10, staleGraceSec: 60, deviceGoneGraceSec: 300 },
    ),
    'The reconciler.',
  ),
  cluster: doc(
    z.optional(ClusterConfigSchema),
    'Cluster networking: how pods reach pods on other nodes and the outside (docs/architecture.md).',
  ),
  shutdownGraceSec: doc(
    z._default(z.number().check(z.minimum(0), z.maximum(600)), 10),
    'Seconds SIGTERM waits for in-flight requests before closing anyway.',
  ),
});
export type FerrydConfig = z.infer<typeof FerrydConfigSchema>;
