/**
 * Endpoints whose network namespace is gone: after a reboot or a crashed runtime no DEL may ever come,
 * so once a netns has been missing for the grace period its endpoint is released. The grace period
 * covers the short window in which a runtime has removed the netns but not yet called DEL. A path left
 * behind that is no namespace any more (an unmounted bind mount's file) counts as gone. An adopted
 * endpoint whose netns its marker could not name ('') is left to the adoption pass, which releases it
 * when its host veth goes.
 */
import type { Logger } from 'pino';
import type { Attachments } from '../attachments/attachments';
import { isNetnsGone } from '../node-state/netns';
import type { AttachmentStore } from '../store/attachments';

export interface StaleEndpointsDeps {
  attachmentStore: AttachmentStore;
  attachments: Attachments;
  log: Logger;
  graceMs: number;
}

export class StaleEndpoints {
  readonly #deps: StaleEndpointsDeps;
  /** attachment id → when its netns was first seen missing. */
  readonly #missingSince = new Map<number, number>();

  constructor(deps: StaleEndpointsDeps) {
    this.#deps = deps;
  }

  /** Releases endpoints whose netns has been gone for the grace period; returns how many. */
  sweep(nowMs: number): number {
    const seen = new Set<number>();
    let released = 0;
    for (const a of this.#deps.attachmentStore.allAttachments()) {
      seen.add(a.generation);
      if (!isNetnsGone(a.netns)) {
        this.#missingSince.delete(a.generation);
        continue;
      }
      const since = this.#missingSince.get(a.generation) ?? nowMs;
      this.#missingSince.set(a.generation, since);
      if (nowMs - since < this.#deps.graceMs) continue;
      const r = this.#deps.attachments.release(a.container_id, a.network, a.if_name);
      this.#missingSince.delete(a.generation);
      released++;
      this.#deps.log.warn(
        { containerId: a.container_id, ifName: a.if_name, netns: a.netns, interfaces: r.released.length },
        'endpoint released: its netns has been gone longer than the grace period',
      );
    }
    for (const id of this.#missingSince.keys()) if (!seen.has(id)) this.#missingSince.delete(id);
    return released;
  }
}
