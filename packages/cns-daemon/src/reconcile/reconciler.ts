/**
 * Periodic repairs that need no request: the commit journal is settled, what a previous boot left is
 * released (once, node-state/boot.ts), the delete queue is drained, addresses whose cooldown has passed
 * become Available, endpoints whose netns is gone are released, delegated devices that came back to the
 * node are freed and renamed home (devices/inventory.ts), and attachments the node shows but the
 * database lacks are adopted (node-state/adoption.ts).
 * Runs once before ferryd reports ready, then every `intervalSec`. Passes never overlap.
 */
import type { ReconcileResult } from '@ferry/shared-types/api/operator';
import type { Logger } from 'pino';
import type { Attachments } from '../attachments/attachments';
import type { Inventory } from '../devices/inventory';
import type { Ipam } from '../ipam/ipam';
import type { Adoption } from '../node-state/adoption';
import type { BootCheck } from '../node-state/boot';
import type { Drainer } from '../queue/drainer';
import type { StorageHealth } from '../storage/health';
import type { StaleEndpoints } from './stale-endpoints';

export interface ReconcilerDeps {
  attachments: Attachments;
  ipam: Ipam;
  inventory: Inventory;
  drainer: Drainer;
  stale: StaleEndpoints;
  boot: BootCheck;
  adoption: Adoption;
  storage: StorageHealth;
  log: Logger;
  now: () => number;
  intervalMs: number;
}

export class Reconciler {
  readonly #deps: ReconcilerDeps;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<ReconcileResult> | undefined;
  #stopped = false;

  constructor(deps: ReconcilerDeps) {
    this.#deps = deps;
  }

  /** One pass; a call while a pass runs joins that pass. */
  runOnce(): Promise<ReconcileResult> {
    this.#running ??= this.#pass().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  /**
   * Runs a pass right away in the background (after a release that freed delegated devices, so the
   * inventory shows them home now rather than at the next period). Errors are logged.
   */
  runSoon(): void {
    if (this.#stopped) return;
    this.runOnce().catch((err: unknown) => {
      // A storage failure is counted and logged there, and makes ferryd not ready until the disk is back.
      if (!this.#deps.storage.errorOf(err, 'reconcile')) this.#deps.log.error({ err }, 'reconcile pass failed');
    });
  }

  start(): void {
    this.#timer = setInterval(() => this.runSoon(), this.#deps.intervalMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#running?.catch(() => undefined);
  }

  /**
   * Queued DELs first (cilium#39370: deletes raced with restore), then cooldowns, then endpoints whose
   * netns is gone, then devices (which the steps before may have freed), then what the node shows and the
   * database lacks (devices are in the inventory by then, so an adopted pod's can be held for it).
   */
  async #pass(): Promise<ReconcileResult> {
    // Committed ADDs are committed before anything below looks at attachments (at start-up too).
    this.#deps.attachments.settleJournal();
    const releasedAfterReboot = this.#deps.boot.releaseAfterReboot();
    const queue = await this.#deps.drainer.drain();
    const now = this.#deps.now();
    const cooledDown = this.#deps.ipam.sweep(now);
    if (cooledDown > 0) this.#deps.log.info({ cooledDown }, 'addresses back to Available after cooldown');
    const staleReleased = this.#deps.stale.sweep(now);
    const devices = await this.#deps.inventory.scan();
    const adoption = await this.#deps.adoption.pass();
    return {
      cooledDown,
      staleReleased,
      devicesRefunded: devices.refunded,
      devicesRenamed: devices.renamed,
      queueApplied: queue.applied + queue.stale,
      adopted: adoption.adopted,
      adoptedReleased: adoption.released,
      releasedAfterReboot,
    };
  }
}
