/**
 * What operators (ferryctl, dashboards) and STATUS read: endpoints with filters, pool usage, per-address
 * state. Also force-delete and reconcile-now. Read paths never change state.
 */

import type { NodesReport } from '@ferry/shared-types/api/cluster';
import type { Device, ReservationRequest } from '@ferry/shared-types/api/devices';
import type { Endpoint, ReleaseResult } from '@ferry/shared-types/api/endpoints';
import type {
  AddressRecord,
  EndpointListQuery,
  InvariantReport,
  OperatorGcRequest,
  OperatorGcResult,
  PoolUsage,
  ReconcileResult,
} from '@ferry/shared-types/api/operator';
import type { QueueStatus } from '@ferry/shared-types/api/queue';
import { CniError, Code } from '@ferry/shared-types/errors';
import type { Attachments } from './attachments/attachments';
import { toRecord } from './attachments/records';
import type { Tenancy } from './attachments/tenancy';
import type { ClusterController } from './cluster/controller';
import { nodesReport } from './cluster/report';
import type { Inventory } from './devices/inventory';
import type { NodeChecks } from './doctor/node-checks';
import { heldIn } from './ipam/allocator';
import { contains, familyOf, fromBigInt, toBigInt } from './ipam/cidr';
import type { Ipam } from './ipam/ipam';
import { isNetnsGone } from './node-state/netns';
import type { Drainer } from './queue/drainer';
import type { AttachmentStore } from './store/attachments';
import type { Invariants } from './store/invariants';
import type { PoolStore } from './store/pools';

export interface OperatorDeps {
  attachmentStore: AttachmentStore;
  pools: PoolStore;
  ipam: Ipam;
  attachments: Attachments;
  invariants: Invariants;
  inventory: Inventory;
  drainer: Drainer;
  nodeChecks: NodeChecks;
  /** Cluster networking, when the config has a `cluster` section. */
  cluster?: ClusterController;
  /** A reservation, like every other way to a device, keeps a bound group to its namespaces. */
  tenancy?: Tenancy;
  /** Runs one reconcile pass now. */
  reconcile(): Promise<ReconcileResult>;
  now: () => number;
}

export class Operator {
  readonly #deps: OperatorDeps;

  constructor(deps: OperatorDeps) {
    this.#deps = deps;
  }

  // Every view of attachments first settles the commit journal (Attachments.settleJournal), so an ADD
  // whose shim committed through it shows as committed.

  listEndpoints(q: EndpointListQuery): Endpoint[] {
    this.#deps.attachments.settleJournal();
    const { attachmentStore, ipam } = this.#deps;
    const byContainer = new Map<string, Endpoint>();
    for (const a of attachmentStore.allAttachments()) {
      if (q.network && a.network !== q.network) continue;
      if (q.namespace && a.pod_namespace !== q.namespace) continue;
      if (q.pod && a.pod_name !== q.pod) continue;
      for (const i of attachmentStore.interfacesOf(a.generation)) {
        if (q.nicType && i.nic_type !== q.nicType) continue;
        const ep = byContainer.get(a.container_id) ?? { containerId: a.container_id, interfaces: [] };
        byContainer.set(a.container_id, ep);
        ep.interfaces.push(toRecord(a, i, ipam));
      }
    }
    return [...byContainer.values()];
  }

  getEndpoint(containerId: string): Endpoint {
    this.#deps.attachments.settleJournal();
    return this.#deps.attachments.get(containerId);
  }

  forceDelete(containerId: string): ReleaseResult {
    this.#deps.attachments.settleJournal();
    return this.#deps.attachments.releaseContainer(containerId);
  }

  /** Usage of every pool, or of one network's. */
  pools(network?: string): PoolUsage[] {
    const { ipam, pools } = this.#deps;
    const now = this.#deps.now();
    const counts = pools.countByState(now);
    const out: PoolUsage[] = [];
    for (const net of network ? [ipam.network(network)] : ipam.networks()) {
      for (const { spec, poolId } of net.pools) {
        const n = (state: string) => counts.find((c) => c.poolId === poolId && c.state === state)?.n ?? 0;
        const assigned = n('Assigned');
        const pendingRelease = n('PendingRelease');
        const held = heldIn(pools, spec, poolId, now);
        const free = spec.size > held ? spec.size - held : 0n;
        out.push({
          network: spec.network,
          family: spec.family,
          subnet: spec.subnetText,
          rangeStart: fromBigInt(spec.start, spec.family),
          rangeEnd: fromBigInt(spec.end, spec.family),
          size: spec.size.toString(),
          assigned,
          pendingRelease,
          free: free.toString(),
          cooldownSec: ipam.cooldownMs / 1000,
        });
      }
    }
    return out;
  }

  addresses(filter: { network?: string; state?: 'Assigned' | 'PendingRelease' }): AddressRecord[] {
    return this.#deps.pools.list(filter, this.#deps.now()).map((r) => ({
      network: r.network,
      family: r.family,
      address: r.address,
      state: r.state,
      ...(r.container_id !== null ? { containerId: r.container_id } : {}),
      ...(r.if_name !== null ? { ifName: r.if_name } : {}),
      since: new Date(r.since_ms).toISOString(),
      ...(r.available_at_ms !== null ? { availableAt: new Date(r.available_at_ms).toISOString() } : {}),
    }));
  }

  reconcile(): Promise<ReconcileResult> {
    return this.#deps.reconcile();
  }

  devices(): Device[] {
    this.#deps.attachments.settleJournal();
    return this.#deps.inventory.list();
  }

  /**
   * A reservation's static addresses must be of the family they claim and outside every pool: IPAM
   * would otherwise hand the same address to another pod.
   */
  reserveDevice(mac: string, req: ReservationRequest): Device {
    for (const [i, a] of req.addresses.entries()) {
      const ip = a.address.slice(0, a.address.lastIndexOf('/'));
      if (familyOf(ip) !== a.family) {
        throw new CniError(Code.InvalidConfig, `addresses[${i}].address: "${a.address}" is not IPv${a.family}`);
      }
      const pool = this.#deps.ipam
        .networks()
        .flatMap((n) => n.pools)
        .find((p) => p.spec.family === a.family && contains(p.spec.subnet, toBigInt(ip)));
      if (pool) {
        throw new CniError(
          Code.InvalidConfig,
          `addresses[${i}].address: "${a.address}" is inside the pool ${pool.spec.subnetText} of network "${pool.spec.network}"`,
        );
      }
    }
    const id = this.#deps.inventory.idOf(mac);
    const device = this.#deps.inventory.list().find((d) => d.id === id);
    if (device && this.#deps.tenancy && !this.#deps.tenancy.mayGive(device.group, req.namespace)) {
      throw new CniError(
        Code.InvalidConfig,
        `reserve device ${device.id} for ${req.namespace}/${req.pod}: its group "${device.group}" is bound to other namespaces (tenancy.deviceGroups)`,
      );
    }
    return this.#deps.inventory.reserve(id, req);
  }

  unreserveDevice(mac: string): Device {
    return this.#deps.inventory.unreserve(mac);
  }

  nodes(): Promise<NodesReport> {
    const { cluster } = this.#deps;
    if (!cluster)
      throw new CniError(Code.NotFound, 'cluster networking is not configured (no `cluster` in the config)');
    return nodesReport(cluster);
  }

  queue(): QueueStatus {
    return this.#deps.drainer.status();
  }

  retryQueueEntry(file: string): QueueStatus {
    this.#deps.drainer.retryFailed(file);
    return this.#deps.drainer.status();
  }

  /** The store's invariants, then the node's (netns, devices, queue). */
  async invariants(): Promise<InvariantReport> {
    this.#deps.attachments.settleJournal();
    const violations = [...this.#deps.invariants.check(), ...(await this.#deps.nodeChecks.check())];
    return { ok: violations.length === 0, violations };
  }

  /**
   * Operator GC: endpoints whose netns is gone, or (given `keep`) whose container is not listed. A dry
   * run unless `apply`; applied, each is released like a DEL would (no netlink work: their netns is gone
   * or their container is dead).
   */
  gc(req: OperatorGcRequest): OperatorGcResult {
    this.#deps.attachments.settleJournal();
    const keep = req.keep ? new Set(req.keep) : undefined;
    const candidates: OperatorGcResult['candidates'] = [];
    for (const a of this.#deps.attachmentStore.allAttachments()) {
      if (req.network && a.network !== req.network) continue;
      const reason =
        keep && !keep.has(a.container_id) ? 'not-kept' : isNetnsGone(a.netns) ? 'netns-missing' : undefined;
      if (reason)
        candidates.push({ containerId: a.container_id, ifName: a.if_name, network: a.network, netns: a.netns, reason });
    }
    if (req.apply) for (const c of candidates) this.#deps.attachments.release(c.containerId, c.network, c.ifName);
    return { applied: req.apply, candidates };
  }
}
