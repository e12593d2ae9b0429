/**
 * The invariants only the node can answer (ferryctl doctor shows them with the store's): every
 * endpoint's netns exists, every assigned delegated device is in its pod and not on the node, and the
 * delete queue is healthy (nothing set aside, nothing waiting for long), every peer's routes are in
 * place with no stale Ferry route left, every resource of the device plugin is registered, and no
 * corrupt database waits for its post-mortem.
 */

import { type Ip, type IpLink, netnsAt, SELF, sameMac } from '@ferry/net';
import type { Violation } from '@ferry/shared-types/api/operator';
import { clusterViolations } from '../cluster/checks';
import type { ClusterController } from '../cluster/controller';
import type { DevicePlugin } from '../device-plugin/build';
import { isNetnsGone } from '../node-state/netns';
import type { Drainer } from '../queue/drainer';
import type { AttachmentStore } from '../store/attachments';
import type { DeviceStore } from '../store/devices';

/** A pending entry older than this means the queue is not being drained. */
const QUEUE_STUCK_SEC = 60;

export interface NodeChecksDeps {
  /** Cluster networking, when configured: every peer's entries present, none of Ferry's stale. */
  cluster?: ClusterController;
  attachmentStore: AttachmentStore;
  devices: DeviceStore;
  drainer: Drainer;
  ip: Ip;
  /** The device plugin, when configured: every resource registered with the kubelet. */
  devicePlugin?: Pick<DevicePlugin, 'status'>;
  /** What the node-state module reports (a corrupt database moved aside). */
  nodeState?: () => Violation[];
}

export class NodeChecks {
  readonly #deps: NodeChecksDeps;

  constructor(deps: NodeChecksDeps) {
    this.#deps = deps;
  }

  async check(): Promise<Violation[]> {
    const out: Violation[] = [];
    const netnsOf = new Map<string, string>();
    for (const a of this.#deps.attachmentStore.allAttachments()) {
      netnsOf.set(a.container_id, a.netns);
      if (isNetnsGone(a.netns)) {
        out.push({
          kind: 'netns-missing',
          subject: `${a.container_id}/${a.if_name}`,
          msg: `netns ${a.netns} is gone`,
        });
      }
    }
    const assigned = this.#deps.devices
      .all()
      .filter((d) => d.interface_id !== null && d.attachment_state === 'committed');
    if (assigned.length > 0) {
      const onNode = await this.#deps.ip.listLinks(SELF);
      const podLinks = new Map<string, IpLink[] | undefined>();
      for (const dev of assigned) {
        const subject = dev.id;
        if (dev.mac && onNode.some((l) => sameMac(l.address, dev.mac ?? undefined))) {
          out.push({
            kind: 'device-misplaced',
            subject,
            msg: `assigned to ${dev.container_id}/${dev.if_name} but on the node`,
          });
          continue;
        }
        const netns = dev.container_id ? netnsOf.get(dev.container_id) : undefined;
        if (!netns) continue;
        // One listing per pod netns; a netns that is gone is reported above, not as a misplaced device.
        if (!podLinks.has(netns)) podLinks.set(netns, await this.#deps.ip.linksIfPresent(netnsAt(netns)));
        const inPod = podLinks.get(netns);
        if (inPod && !inPod.some((l) => sameMac(l.address, dev.mac ?? undefined))) {
          out.push({
            kind: 'device-misplaced',
            subject,
            msg: `not in ${netns}, where ${dev.container_id}/${dev.if_name} has it`,
          });
        }
      }
    }
    const q = this.#deps.drainer.status();
    for (const f of q.failed) out.push({ kind: 'queue-failed', subject: f.file, msg: `set aside: ${f.reason}` });
    if (q.oldestAgeSec > QUEUE_STUCK_SEC) {
      out.push({
        kind: 'queue-stuck',
        subject: q.dir,
        msg: `${q.pending.length} pending, oldest ${Math.round(q.oldestAgeSec)} s`,
      });
    }
    if (this.#deps.cluster) out.push(...(await clusterViolations(this.#deps.cluster)));
    for (const r of this.#deps.devicePlugin?.status() ?? []) {
      if (r.registered) continue;
      out.push({
        kind: 'device-plugin-unregistered',
        subject: r.resource,
        msg: `not registered with the kubelet: ${r.lastError ?? 'no kubelet socket yet'}; pods cannot ask for it`,
      });
    }
    out.push(...(this.#deps.nodeState?.() ?? []));
    return out;
  }
}
