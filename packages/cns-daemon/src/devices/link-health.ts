/**
 * Delegated devices' health at the speed of the kernel's link events, the inventory's periodic scan
 * (reconcile.intervalSec) staying the backstop: a link event that concerns a device (gone, back, its PF's
 * carrier) is applied to the inventory at once, whose listener sends the device plugin's lists to the
 * kubelet, and a rescan follows to settle the rest (a device back home to rename, a new one a name
 * pattern takes in) and to correct the event's view if a scan in flight wrote an older one.
 * The rescans coalesce: a burst of events (a PF's VFs going at once) is one scan plus at most one more.
 * A monitor that (re)starts has missed what happened while it was down, so each start rescans too.
 */
import type { LinkEvent, LinkMonitorEvent } from '@ferry/net';
import type { Logger } from 'pino';
import { CoalescedRun } from '../coalesced-run';
import type { StorageHealth } from '../storage/health';
import type { Inventory } from './inventory';

export interface LinkHealthDeps {
  inventory: Inventory;
  /** The monitor in ferryd's namespace (the node's): its process is started and stopped with this part. */
  monitor: { start(): void; stop(): Promise<void> };
  storage: StorageHealth;
  log: Logger;
}

/** How long after a link event its settling rescan comes (the events of one ADD or DEL come together). */
const RESCAN_SETTLE_MS = 1000;

export class LinkHealth {
  readonly #deps: LinkHealthDeps;
  readonly #rescan: CoalescedRun;
  #stopped = false;
  #settleTimer: NodeJS.Timeout | undefined;

  constructor(deps: LinkHealthDeps) {
    this.#deps = deps;
    this.#rescan = new CoalescedRun(
      async () => void (await deps.inventory.scan()),
      () => this.#stopped,
    );
  }

  /** What the monitor reported. */
  on(e: LinkMonitorEvent): void {
    const { log } = this.#deps;
    switch (e.type) {
      case 'link':
        if (this.#apply(e.link)) this.#rescanSoon();
        return;
      case 'started':
        log.debug({ pid: e.pid }, 'link monitor started');
        this.#rescanSoon();
        return;
      case 'exited':
        log.warn(
          { ...e.exit, restartInMs: e.restartInMs },
          'link monitor exited: started again shortly (device health follows the inventory scan meanwhile)',
        );
        return;
    }
  }

  start(): void {
    this.#deps.monitor.start();
  }

  /** Stops the monitor, then waits for a rescan in progress (it uses the store). */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#settleTimer);
    await this.#deps.monitor.stop();
    await this.#rescan.idle();
  }

  /**
   * Applies an event that concerns a device and says whether it did; a store that fails is left to the
   * rescan (never thrown into the monitor's output stream).
   */
  #apply(link: LinkEvent): boolean {
    const { inventory, log, storage } = this.#deps;
    try {
      if (!inventory.concerns(link)) return false;
      log.debug({ ...link }, 'link event of a delegated device: applied, rescanning the inventory');
      inventory.applyLinkEvent(link);
    } catch (err) {
      if (!storage.errorOf(err, 'device health'))
        log.error({ err, ...link }, 'link event: cannot apply it; rescanning');
    }
    return true;
  }

  /**
   * The rescan that settles what an event did not say comes RESCAN_SETTLE_MS after the first event of a
   * burst, once: a pod's ADD or DEL moves links (each an event), and a scan of its own (an `ip` spawn and
   * sysfs reads) in the middle of it cost a delegated NIC's ADD ~10 % (bench:delegated). The event itself
   * was applied at once; health does not wait for this.
   */
  #rescanSoon(): void {
    if (this.#settleTimer || this.#stopped) return;
    this.#settleTimer = setTimeout(() => {
      this.#settleTimer = undefined;
      this.#rescan.run().catch((err: unknown) => {
        if (!this.#deps.storage.errorOf(err, 'device health')) this.#deps.log.error({ err }, 'device rescan failed');
      });
    }, RESCAN_SETTLE_MS);
    this.#settleTimer.unref();
  }
}
