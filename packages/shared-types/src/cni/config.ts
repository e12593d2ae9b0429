/**
 * The network configuration a plugin receives on stdin (SPEC.md §1 and §3): one plugin's entry of a
 * conflist, with cniVersion and name filled in by the runtime, plus Ferry's own keys. Unknown keys are
 * kept and ignored, as the spec asks of plugins.
 */
import * as z from 'zod/mini';
import {
  DEFAULT_COMMIT_JOURNAL,
  DEFAULT_DAEMON_TIMEOUTS,
  DEFAULT_DELETE_QUEUE,
  DEFAULT_DELETE_QUEUE_LIMIT,
  DEFAULT_SHIM_LOG_FILE,
  DEFAULT_SHIM_LOG_MAX_BACKUPS,
  DEFAULT_SHIM_LOG_MAX_SIZE_KIB,
  DEFAULT_SOCKET,
  SHIM_LOG_MAX_BACKUPS_LIMIT,
  SHIM_LOG_MAX_SIZE_KIB_LIMIT,
} from '../config/defaults';
import { doc } from '../doc';
import { ConfDnsSchema } from './dns';
import { absolutePath, NetworkNameSchema } from './names';

const Int = () => z.number().check(z.int());

/** One runtimeConfig.portMappings entry (CONVENTIONS.md). */
export const PortMappingSchema = z.looseObject({
  hostPort: Int(),
  containerPort: Int(),
  protocol: z.optional(z.string()),
  hostIP: z.optional(z.string()),
});

/** runtimeConfig: the capabilities the runtime supplied (CONVENTIONS.md "Well-known Capabilities"). */
export const RuntimeConfigSchema = z.looseObject({
  portMappings: z.optional(z.array(PortMappingSchema)),
  ipRanges: z.optional(z.array(z.array(z.looseObject({ subnet: z.string() })))),
  bandwidth: z.optional(z.looseObject({})),
  dns: z.optional(ConfDnsSchema),
  ips: z.optional(z.array(z.string())),
  mac: z.optional(z.mac()),
  infinibandGUID: z.optional(z.string()),
  deviceID: z.optional(z.string()),
  aliases: z.optional(z.array(z.string())),
  cgroupPath: z.optional(z.string()),
});
export type RuntimeConfig = z.infer<typeof RuntimeConfigSchema>;

/** One `cni.dev/valid-attachments` entry (GC). */
export const GcAttachmentSchema = z.looseObject({ containerID: z.string(), ifname: z.string() });
export type GcAttachment = z.infer<typeof GcAttachmentSchema>;

/** Ask ferryd for delegated NICs of a device group for every pod on this network. */
export const DelegatedNicsRequestSchema = z.strictObject({
  group: NetworkNameSchema,
  count: Int().check(z.minimum(1), z.maximum(16)),
});
export type DelegatedNicsRequest = z.infer<typeof DelegatedNicsRequestSchema>;

/** Time limits for talking to ferryd (defaults in config/defaults.ts). */
export const DaemonTimeoutsSchema = z.strictObject({
  connectMs: doc(
    z.optional(Int().check(z.minimum(1), z.maximum(60_000))),
    `Connect timeout of one request. Default: ${DEFAULT_DAEMON_TIMEOUTS.connectMs}.`,
  ),
  requestMs: doc(
    z.optional(Int().check(z.minimum(1), z.maximum(300_000))),
    `Total deadline of one request, answer included. Default: ${DEFAULT_DAEMON_TIMEOUTS.requestMs}.`,
  ),
  addWaitMs: doc(
    z.optional(Int().check(z.minimum(0), z.maximum(300_000))),
    `How long ADD waits for ferryd to become ready before failing with code 11. Default: ${DEFAULT_DAEMON_TIMEOUTS.addWaitMs}.`,
  ),
  delWaitMs: doc(
    z.optional(Int().check(z.minimum(0), z.maximum(60_000))),
    `How long DEL keeps asking a ferryd that is running but does not answer (frozen, overloaded) before it queues the DEL. A ferryd that is not running (socket absent or refusing connections) is not waited for: the DEL is queued at once. Default: ${DEFAULT_DAEMON_TIMEOUTS.delWaitMs}.`,
  ),
});
export type DaemonTimeouts = z.infer<typeof DaemonTimeoutsSchema>;

/** The network config as ferry-cni receives it on stdin. */
export const NetConfSchema = z.looseObject({
  cniVersion: doc(z.string(), 'Spec version of this config; the result is printed in it (0.3.0 to 1.1.0).'),
  name: doc(NetworkNameSchema.clone(), 'Network name: must be a network configured in ferryd.'),
  type: doc(z.string(), 'The plugin: `ferry-cni`.'),
  args: z.optional(z.looseObject({})),
  runtimeConfig: doc(
    z.optional(RuntimeConfigSchema),
    "Capabilities the runtime passes; Ferry reads `mac` (the InfraNIC's) and `deviceID` (a secondary network's device, by PCI address, as Multus passes what the SR-IOV device plugin allocated).",
  ),
  prevResult: z.optional(z.nullable(z.looseObject({}))),
  dns: doc(z.optional(ConfDnsSchema), "DNS for the result, when ferryd's network gives none."),
  ipam: doc(
    z.optional(z.looseObject({ type: z.optional(z.string()) })),
    'Not supported: Ferry allocates through ferryd, and a delegated IPAM is refused on ADD, CHECK and STATUS (code 2); DEL and GC still run.',
  ),
  ipMasq: z.optional(z.boolean()),
  // Ferry's keys (docs/architecture.md "Entry points").
  daemonSocket: doc(z.optional(absolutePath()), `ferryd's socket. Default: ${DEFAULT_SOCKET}.`),
  logFile: doc(z.optional(absolutePath()), `Where the shim logs (JSON lines). Default: ${DEFAULT_SHIM_LOG_FILE}.`),
  logLevel: doc(z.optional(z.enum(['debug', 'info', 'warn', 'error', 'silent'])), 'Default: info.'),
  logMaxSizeKiB: doc(
    z.optional(Int().check(z.minimum(0), z.maximum(SHIM_LOG_MAX_SIZE_KIB_LIMIT))),
    `Size past which the log file is rotated: moved aside as \`<logFile>.<UTC time>-<pid>\` (a shim checks once per run, after its first line). 0: never rotate (leave it to logrotate). Default: ${DEFAULT_SHIM_LOG_MAX_SIZE_KIB} (10 MiB).`,
  ),
  logMaxBackups: doc(
    z.optional(Int().check(z.minimum(0), z.maximum(SHIM_LOG_MAX_BACKUPS_LIMIT))),
    `Rotated log files kept; older ones are deleted at rotation. Default: ${DEFAULT_SHIM_LOG_MAX_BACKUPS}.`,
  ),
  deleteQueue: doc(
    z.optional(absolutePath()),
    `Where DELs are queued while ferryd is unreachable (ferryd's \`deleteQueue\`). Default: ${DEFAULT_DELETE_QUEUE}.`,
  ),
  commitJournal: doc(
    z.optional(absolutePath()),
    `Where ADD writes its commit for ferryd (ferryd's \`commitJournal\`); ADD commits over the socket instead where the entry cannot be written (the directory is missing because no ferryd has run on the node yet, or it is read-only or full). Default: \`commit-journal\` next to \`deleteQueue\` (${DEFAULT_COMMIT_JOURNAL}).`,
  ),
  deleteQueueLimit: doc(
    z.optional(Int().check(z.minimum(1), z.maximum(1_000_000))),
    `Entries the queue may hold; a DEL that finds it full fails (code 110) and is retried. Default: ${DEFAULT_DELETE_QUEUE_LIMIT}.`,
  ),
  delegatedNICs: doc(
    z.optional(DelegatedNicsRequestSchema),
    'Delegated NICs for every pod: `{"group": "frontend", "count": 1}`.',
  ),
  mtu: doc(
    z.optional(Int().check(z.minimum(68), z.maximum(65535))),
    "MTU of the pod's InfraNIC (wins over ferryd's network `mtu`).",
  ),
  infraNIC: doc(
    z.optional(z.boolean()),
    "`false` where ferryd's network says `infraNIC: false` (a secondary network): ADD then makes no InfraNIC veth while ferryd answers. ferryd's network decides what is built; this only spares a veth made for nothing (also spared when `runtimeConfig.deviceID` is given).",
  ),
  daemonTimeouts: doc(z.optional(DaemonTimeoutsSchema), 'Time limits for talking to ferryd.'),
  // GC (SPEC.md §2 "GC"); libcni sends both names (cni#1101).
  'cni.dev/valid-attachments': z.optional(z.array(GcAttachmentSchema)),
  'cni.dev/attachments': z.optional(z.array(GcAttachmentSchema)),
});
export type NetConf = z.infer<typeof NetConfSchema>;
