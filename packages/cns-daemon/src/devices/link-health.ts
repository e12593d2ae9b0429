/**
 * Delegated devices' health at the speed of the kernel's link events, the inventory's periodic scan
 * (reconcile.intervalSec) staying the backstop: a link event that concerns a device (gone, back, renamed)
 * rescans the inventory at once, and the scan's listener sends the device plugin's lists to the kubelet.
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

export class LinkHealth {
  readonly #deps: LinkHealthDeps;
  readonly #rescan: CoalescedRun;
  #stopped = false;

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
        if (!this.#concerns(e.link)) return;
        log.debug({ ...e.link }, 'link event of a delegated device: rescanning the inventory');
        this.#rescanSoon();
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
    await this.#deps.monitor.stop();
    await this.#rescan.idle();
  }

  /** A read of the store that fails rescans rather than throwing into the monitor's output stream. */
  #concerns(link: LinkEvent): boolean {
    try {
      return this.#deps.inventory.concerns(link);
    } catch (err) {
      this.#deps.log.error({ err, ifname: link.ifname }, 'link event: cannot read the inventory; rescanning');
      return true;
    }
  }

  #rescanSoon(): void {
    this.#rescan.run().catch((err: unknown) => {
      if (!this.#deps.storage.errorOf(err, 'device health')) this.#deps.log.error({ err }, 'device rescan failed');
    });
  }
}
