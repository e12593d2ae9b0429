/**
 * The kernel's link events in one namespace, as they happen: `ip -o monitor link` kept running, its
 * lines typed, the process started again whenever it exits until stop(). Node has no netlink socket of
 * its own (the shim's rtnetlink layer is Bun's FFI, and blocking), so the subscription is iproute2's.
 * iproute2 6.1 prints monitor events as text only (`-j` is ignored there); `-o` puts each on one line.
 */
import { ipArgv, type Netns } from './netns';
import type { Child, ChildExit, Spawner } from './run';

/** One link change the kernel announced (RTM_NEWLINK or RTM_DELLINK). */
export interface LinkEvent {
  /** deleted: the link left the namespace (removed, or moved into another one); changed: anything else. */
  kind: 'changed' | 'deleted';
  ifindex: number;
  ifname: string;
  /** Lower case; absent for a link without a link-layer address. */
  mac?: string;
  /** LOWER_UP among its flags: it is up and has carrier (a NIC's cable, a veth's far end up). */
  hasCarrier: boolean;
}

/** What a monitor reports: a link event, its process started (events before it were missed), or exited. */
export type LinkMonitorEvent =
  | { type: 'link'; link: LinkEvent }
  | { type: 'started'; pid: number | undefined }
  | { type: 'exited'; exit: ChildExit; restartInMs: number };

// `[Deleted ]7: eth1@if2: <BROADCAST,...> mtu 1500 ... \    link/ether 02:fe:00:00:00:01 brd ...`
const LINE = /^(Deleted )?(\d+): ([^:\s]+): <([^>]*)>/;
const LLADDR = /\slink\/\S+ ((?:[0-9a-f]{2}:)+[0-9a-f]{2})(?:\s|$)/i;

/** One line of `ip -o monitor link`; undefined for a line that is no link event. */
export function parseLinkEvent(line: string): LinkEvent | undefined {
  const m = LINE.exec(line);
  if (!m?.[2] || !m[3]) return undefined;
  // A veth's or VLAN's name is printed with its peer or parent (`eth1@if2`); an ifname has no '@'.
  const ifname = m[3].replace(/@[^@]*$/, '');
  const mac = LLADDR.exec(line)?.[1]?.toLowerCase();
  const hasCarrier = (m[4] ?? '').split(',').includes('LOWER_UP');
  return { kind: m[1] ? 'deleted' : 'changed', ifindex: Number(m[2]), ifname, ...(mac ? { mac } : {}), hasCarrier };
}

export interface LinkMonitorOptions {
  netns: Netns;
  spawn: Spawner;
  /** The first restart's delay; each quick death doubles it, up to `maxRestartMs`. */
  restartMs?: number;
  maxRestartMs?: number;
}

/** A process that ran this long was healthy: its death is a fresh failure, restarted after `restartMs`. */
const HEALTHY_RUN_MS = 30_000;

/** A link monitor: start() subscribes, each event goes to the listener, stop() ends the process. */
export class LinkMonitor {
  readonly #opts: Required<LinkMonitorOptions>;
  #listener: (e: LinkMonitorEvent) => void = () => undefined;
  #child: Child | undefined;
  #timer: NodeJS.Timeout | undefined;
  #delayMs: number;
  #stopped = true;

  constructor(opts: LinkMonitorOptions) {
    this.#opts = { restartMs: 250, maxRestartMs: 30_000, ...opts };
    this.#delayMs = this.#opts.restartMs;
  }

  /** `listener` is told every event (one listener: the part that acts on them). */
  onEvent(listener: (e: LinkMonitorEvent) => void): void {
    this.#listener = listener;
  }

  /** The monitor's process now; undefined while it is being restarted or after stop(). */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#spawn();
  }

  /** Ends the process and resolves once it has exited; no restart follows. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    const child = this.#child;
    child?.kill();
    await child?.exited;
  }

  #spawn(): void {
    const startedAt = Date.now();
    const child = this.#opts.spawn(ipArgv(this.#opts.netns, ['-o', 'monitor', 'link']), (line) => {
      const link = parseLinkEvent(line);
      if (link && !this.#stopped && this.#child === child) this.#listener({ type: 'link', link });
    });
    this.#child = child;
    this.#listener({ type: 'started', pid: child.pid });
    void child.exited.then((exit) => {
      if (this.#child === child) this.#child = undefined;
      if (this.#stopped) return;
      if (Date.now() - startedAt >= HEALTHY_RUN_MS) this.#delayMs = this.#opts.restartMs;
      const restartInMs = this.#delayMs;
      this.#delayMs = Math.min(this.#delayMs * 2, this.#opts.maxRestartMs);
      this.#listener({ type: 'exited', exit, restartInMs });
      this.#timer = setTimeout(() => {
        if (!this.#stopped) this.#spawn();
      }, restartInMs);
      this.#timer.unref();
    });
  }
}
