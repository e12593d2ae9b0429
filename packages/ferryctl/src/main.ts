/**
 * ferryctl [--socket PATH | --url URL --token-file FILE] <command> [args] [--json]
 * Exit codes: 0 ok, 1 ferryd reported a problem (or doctor found one), 2 usage, 3 ferryd unreachable.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { DEFAULT_SOCKET } from '@ferry/shared-types/config/defaults';
import { CniError, Code } from '@ferry/shared-types/errors';
import { FerrydClient } from './client';
import { cmdBlocks } from './commands/blocks';
import { cmdDevices } from './commands/devices';
import { cmdDoctor } from './commands/doctor';
import { cmdEndpoints } from './commands/endpoints';
import { cmdGc } from './commands/gc';
import { cmdHealth } from './commands/health';
import { cmdInstall } from './commands/install';
import { cmdIpam } from './commands/ipam';
import { cmdNodes } from './commands/nodes';
import { cmdPods } from './commands/pods';
import { cmdQueue } from './commands/queue';
import { cmdReconcile } from './commands/reconcile';
import type { Context } from './context';

const COMMANDS: Record<string, (ctx: Context) => Promise<number>> = {
  endpoints: cmdEndpoints,
  ipam: cmdIpam,
  devices: cmdDevices,
  queue: cmdQueue,
  gc: cmdGc,
  doctor: cmdDoctor,
  nodes: cmdNodes,
  blocks: cmdBlocks,
  pods: cmdPods,
  reconcile: cmdReconcile,
  health: cmdHealth,
  install: cmdInstall,
};

const USAGE = `usage: ferryctl [--socket PATH | --url URL --token-file FILE] [--json] <command>

commands:
  endpoints [list] [--namespace NS] [--pod NAME] [--network NET] [--nic-type InfraNIC|DelegatedNIC]
  endpoints show <containerID>       every interface of one container
  endpoints delete <containerID>     force-delete its state and release its addresses
  ipam [pools]                       pools: size, assigned, cooling down, free, cooldown
  ipam addresses [--network NET] [--state Assigned|PendingRelease]
  devices [list]                     delegated-NIC inventory: state, holder, reservation
  devices reserve <device> --namespace NS --pod POD [--ifname NAME]  (device: a PCI address or MAC)
  devices unreserve <device>
  queue [list]                       delete queue: pending entries, and set-aside ones with reasons
  queue retry <file>                 put a set-aside entry back (it is validated again)
  gc [--network NET] [--keep ID,...] [--apply]
                                     endpoints whose netns is gone (or not kept); dry run unless --apply
  reconcile                          run one reconcile pass now
  nodes                              cluster networking: peers, their pod CIDRs, this node's routes and
                                     VXLAN entries for them (present, missing, refused), stale ones
  blocks [list]                      cluster IPAM: this node's blocks of each range (used, free, pods on
                                     their way), the cluster's use of the range; exit 1 on a conflict
  pods [list]                        this node's pods as ferryd's watch holds them, what each asks for
                                     (ferry.dev/nics), the network-status writer's queue
  pods show <namespace/name> [--uid UID]
                                     one pod, found as an ADD finds it (the cache, else the API server)
  doctor                             check the store, the node, the queue and the cluster routes; exit 1 on a violation
  health [--ready [--ready-file F]]  exit 0 when ferryd is alive (ready; with F: and the ferryd writing F
                                     serves the socket); for probes
  install --shim F --cni-bin-dir D --conflist F --cni-conf-dir D [--plugins-dir D] [--ready-file F [--wait-sec N]]
          [--ferryd-config-template F --ferryd-config-out F --node NAME
           [--api-server URL] [--api-token-file F] [--api-ca-file F]]
                                     the DaemonSet's init step: install ferry-cni and the conflist
                                     atomically (with F: once the ferryd writing F serves the socket,
                                     waiting N s at most), render ferryd's config with the node's pod CIDRs

exit codes: 0 ok, 1 ferryd reported a problem (or doctor found one), 2 usage, 3 ferryd unreachable
`;

const OPTIONS = {
  socket: { type: 'string' },
  url: { type: 'string' },
  'token-file': { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  namespace: { type: 'string' },
  pod: { type: 'string' },
  network: { type: 'string' },
  'nic-type': { type: 'string' },
  state: { type: 'string' },
  timeout: { type: 'string' },
  ifname: { type: 'string' },
  keep: { type: 'string' },
  apply: { type: 'boolean' },
  ready: { type: 'boolean' },
  'ready-file': { type: 'string' },
  'wait-sec': { type: 'string' },
  'plugins-dir': { type: 'string' },
  shim: { type: 'string' },
  'cni-bin-dir': { type: 'string' },
  conflist: { type: 'string' },
  'cni-conf-dir': { type: 'string' },
  'ferryd-config-template': { type: 'string' },
  'ferryd-config-out': { type: 'string' },
  node: { type: 'string' },
  uid: { type: 'string' },
  'api-server': { type: 'string' },
  'api-token-file': { type: 'string' },
  'api-ca-file': { type: 'string' },
} as const;

export interface CtlIo {
  out(text: string): void;
  err(text: string): void;
}

export async function main(argv: readonly string[], env: NodeJS.ProcessEnv, io: CtlIo): Promise<number> {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>;
  try {
    parsed = parseArgs({ args: [...argv], allowPositionals: true, strict: true, options: OPTIONS });
  } catch (err) {
    io.err(`ferryctl: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const [command, ...rest] = positionals;
  if (values.help || !command) {
    (values.help ? io.out : io.err)(USAGE);
    return values.help ? 0 : 2;
  }
  const run = COMMANDS[command];
  if (!run) {
    io.err(`ferryctl: unknown command "${command}"\n\n${USAGE}`);
    return 2;
  }
  let token: string | undefined;
  if (values['token-file']) {
    try {
      token = readFileSync(values['token-file'], 'utf8').trim();
    } catch (err) {
      io.err(`ferryctl: read token file ${values['token-file']}: ${(err as Error).message}\n`);
      return 2;
    }
  }
  const socket = values.socket ?? env.FERRY_SOCKET ?? DEFAULT_SOCKET;
  const client = new FerrydClient({
    socket,
    ...(values.url ? { url: values.url } : {}),
    ...(token ? { token } : {}),
    timeoutMs: Number(values.timeout ?? 10_000),
  });
  const ctx: Context = {
    positionals: rest,
    flags: values,
    json: values.json ?? false,
    client,
    socket,
    print: (text) => {
      io.out(`${text}\n`);
      return 0;
    },
    usage: (problem) => {
      io.err(`ferryctl: ${problem}\n\n${USAGE}`);
      return 2;
    },
  };
  try {
    return await run(ctx);
  } catch (err) {
    if (err instanceof CniError) {
      io.err(`ferryctl: ${err.message}${err.details ? ` (${err.details})` : ''}\n`);
      return err.code === Code.TryAgainLater ? 3 : 1;
    }
    throw err;
  }
}
