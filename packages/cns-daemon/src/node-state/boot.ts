/**
 * Reboots. The kernel's boot id (/proc/sys/kernel/random/boot_id) changes on every boot; ferryd keeps the
 * one it last started under. Under a new one, nothing of the old boot can still use an address: every
 * endpoint whose netns is gone is released at once (no stale grace period), and every address cooling
 * down becomes Available (no cooldown), so a full node's new pods never meet a pool the old boot holds.
 */
import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import type { Attachments } from '../attachments/attachments';
import type { AttachmentStore } from '../store/attachments';
import type { NodeStateStore } from '../store/node-state';
import type { PoolStore } from '../store/pools';
import { isLiveNetns } from './netns';

export interface BootCheckDeps {
  /** Where the boot id is read (tests point it at a file of their own). */
  bootIdPath: string;
  nodeState: NodeStateStore;
  attachmentStore: AttachmentStore;
  pools: PoolStore;
  attachments: Attachments;
  log: Logger;
  /** Counts endpoints released because the node rebooted (the metric). */
  onReleased?: (n: number) => void;
}

export class BootCheck {
  readonly #deps: BootCheckDeps;
  #checked = false;

  constructor(deps: BootCheckDeps) {
    this.#deps = deps;
  }

  /**
   * Once per process (the first reconcile pass, before ready): compares the boot id with the stored one
   * and, on a new boot, releases what the old boot left. Returns how many endpoints it released.
   */
  releaseAfterReboot(): number {
    if (this.#checked) return 0;
    const { nodeState, attachmentStore, pools, attachments, log } = this.#deps;
    const bootId = this.#readBootId();
    const previous = bootId === undefined ? undefined : nodeState.get('boot_id');
    let released = 0;
    if (bootId !== undefined && previous !== undefined && previous !== bootId) {
      for (const a of attachmentStore.allAttachments()) {
        if (isLiveNetns(a.netns)) continue;
        attachments.release(a.container_id, a.network, a.if_name, a.generation);
        released++;
      }
      const cooled = pools.dropCooling();
      log.warn(
        { bootId, previousBootId: previous, released, cooledDown: cooled },
        'new boot: endpoints whose netns is gone released and cooling addresses freed at once',
      );
      if (released > 0) this.#deps.onReleased?.(released);
    }
    // Recorded last: a write that fails (a full disk) leaves the check to the next pass, which repeats
    // only what is left (a release is idempotent).
    if (bootId !== undefined && previous !== bootId) nodeState.set('boot_id', bootId);
    this.#checked = true;
    return released;
  }

  #readBootId(): string | undefined {
    try {
      const id = readFileSync(this.#deps.bootIdPath, 'utf8').trim();
      if (id) return id;
    } catch (err) {
      this.#deps.log.warn(
        { err, path: this.#deps.bootIdPath },
        'cannot read the boot id: reboots are found by the netns check alone',
      );
      return undefined;
    }
    this.#deps.log.warn(
      { path: this.#deps.bootIdPath },
      'the boot id file is empty: reboots are found by the netns check alone',
    );
    return undefined;
  }
}
