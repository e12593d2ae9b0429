/**
 * The state machine behind the shim API: allocate → commit → release, plus GC and force-delete. Every
 * change to an attachment is atomic: one SQLite transaction, or one savepoint of the shared transaction
 * when the shim's requests are grouped (store/group-commit.ts); GC makes one per attachment it releases.
 * So addresses and endpoint state always change together (the split Azure's CNS suffers from, issue
 * #4829, cannot happen here).
 */
import type { AllocateRequest, Allocation, NicPlan } from '@ferry/shared-types/api/allocations';
import type { ReservationRequest } from '@ferry/shared-types/api/devices';
import type { CommitRequest, Endpoint, InterfaceRecord, ReleaseResult } from '@ferry/shared-types/api/endpoints';
import type { GcRequest, GcResult } from '@ferry/shared-types/api/gc';
import type { QueueEntry } from '@ferry/shared-types/api/queue';
import { CniError, Code } from '@ferry/shared-types/errors';
import { HOST_VETH_MAC } from '@ferry/shared-types/host-veth';
import { hostVethMarkerOf } from '@ferry/shared-types/link-marker';
import { endpointIdOf } from '@ferry/shared-types/nic';
import type { Logger } from 'pino';
import { reservationOf } from '../devices/inventory';
import type { Ipam } from '../ipam/ipam';
import { storageFaultOf } from '../storage/fault';
import { type Db, transactionRunner } from '../store/db';
import type { DeviceStore } from '../store/devices';
import type { EndpointStore } from '../store/endpoints';
import type { AttachmentRow, DeviceRow, InterfaceRow } from '../store/rows';
import type { JournalDir } from './commit-journal';
import { entryFileNameOf, hostVethNameOf } from './host-veth';
import { addressesOf, routesOf, toRecord } from './records';

export interface AttachmentsDeps {
  db: Db;
  endpoints: EndpointStore;
  devices: DeviceStore;
  ipam: Ipam;
  now: () => number;
  /** The commit journal, when ferryd reads one (settleJournal); its log lines go to `log`. */
  journal?: JournalDir;
  log?: Logger;
  /**
   * Called (inside the releasing transaction: it must only schedule work) whenever a release frees
   * delegated devices, whoever released them: the shim, GC, a queued DEL, an operator.
   */
  onDevicesReleased?: () => void;
  /** Told how many journal entries each settle promoted and discarded (the metric counts them). */
  onJournalSettled?: (outcome: { promoted: number; discarded: number }) => void;
}

/** The key of one attachment. */
export type AttachmentKey = Pick<AllocateRequest, 'network' | 'containerId' | 'ifName'>;

interface WantedDevice {
  row: DeviceRow;
  ifName?: string;
  reservation?: ReservationRequest;
}

export class Attachments {
  readonly #d: AttachmentsDeps;
  readonly #tx: <T>(fn: () => T) => T;
  /**
   * When each attachment key was last asked to be released (found or not): the node-state adoption reads
   * a host veth outside any transaction, and must not bring back an attachment whose DEL ran meanwhile.
   */
  readonly #releasesAsked = new Map<string, number>();

  constructor(deps: AttachmentsDeps) {
    this.#d = deps;
    this.#tx = transactionRunner(deps.db);
  }

  /**
   * Idempotent per (network, containerId, ifName) until commit: the same request returns the same plan
   * (an ADD retried after it was interrupted). `created` tells a new attachment from a repeated one.
   */
  allocate(req: AllocateRequest): { plan: Allocation; created: boolean } {
    return this.#tx(() => {
      const { endpoints, ipam } = this.#d;
      const existing = endpoints.getAttachment(req.containerId, req.ifName);
      if (existing) {
        if (existing.network !== req.network) throw conflictingNetwork(existing, req.network);
        if (existing.state === 'committed') {
          throw new CniError(
            Code.AttachmentConflict,
            `allocate ${req.containerId}/${req.ifName}: the attachment is already set up (committed at ${new Date(existing.updated_at_ms).toISOString()}); DEL it before adding it again`,
          );
        }
        // A DEL queued before this moment must not release what this ADD is about to build.
        endpoints.touch(existing.id, this.#d.now());
        return { plan: this.#planOf(existing), created: false };
      }
      // The container's other interfaces: a name this one must not take, devices it already holds.
      const others = endpoints.interfacesOfContainer(req.containerId);
      if (others.some((i) => i.if_name === req.ifName)) {
        throw new CniError(
          Code.AttachmentConflict,
          `allocate ${req.containerId}/${req.ifName}: "${req.ifName}" is already a delegated interface of this container`,
        );
      }
      const net = ipam.network(req.network);
      const wanted = this.#wantedDevices(req, others);
      const now = this.#d.now();
      const attachment = endpoints.insertAttachment({
        network: req.network,
        containerId: req.containerId,
        ifName: req.ifName,
        netns: req.netns,
        ...(req.pod?.namespace ? { podNamespace: req.pod.namespace } : {}),
        ...(req.pod?.name ? { podName: req.pod.name } : {}),
        ...(req.pod?.uid ? { podUid: req.pod.uid } : {}),
        ...(req.pod?.infraContainerId ? { podInfraContainerId: req.pod.infraContainerId } : {}),
        nowMs: now,
      });
      const infraId = endpoints.insertInterface({
        attachmentId: attachment.id,
        position: 0,
        containerId: req.containerId,
        ifName: req.ifName,
        endpointId: endpointIdOf('InfraNIC', req.containerId, req.ifName),
        nicType: 'InfraNIC',
        routesJson: net.routesJson,
        hostVethName: hostVethNameOf(req.network, req.containerId, req.ifName),
      });
      ipam.assign(req.network, infraId, now);
      this.#attachDevices(req, attachment.id, wanted, others);
      return { plan: this.#planOf(attachment), created: true };
    });
  }

  /**
   * Promotes every commit-journal entry to a commit (commit() below: same checks, same transaction
   * shape) or discards it with a log line when it cannot be one (released, stale generation, invalid).
   * Callers run it before they read or change attachments, so every ADD whose shim wrote its entry is
   * committed by then. Outside any transaction only: a file is removed once the transaction that
   * promoted it has committed, so a rollback leaves the entry for the next settle (promoting twice is
   * harmless). A storage failure throws and removes nothing. With `scope`, only one attachment's entry
   * (what an allocation of it must see: one lookup of a file that is usually not there) or the files
   * named (those waitingInJournal() listed; any already settled are skipped).
   */
  settleJournal(scope?: { attachment: AttachmentKey } | { names: readonly string[] }): {
    promoted: number;
    discarded: number;
  } {
    const { journal, db, log } = this.#d;
    if (!journal) return { promoted: 0, discarded: 0 };
    const names = !scope
      ? undefined
      : 'names' in scope
        ? scope.names
        : [entryFileNameOf(scope.attachment.network, scope.attachment.containerId, scope.attachment.ifName)];
    const files = names ? names.flatMap((n) => journal.read(n) ?? []) : journal.list(this.#d.now());
    if (files.length === 0) return { promoted: 0, discarded: 0 };
    if (db.inTransaction) throw new CniError(Code.Internal, 'settle the commit journal: called inside a transaction');
    const outcomes = this.#tx(() =>
      files.map((f) => {
        if ('problem' in f) return f.problem;
        try {
          this.#tx(() => this.#commit(f.entry.containerId, f.entry, Date.parse(f.entry.writtenAt)));
          return undefined;
        } catch (err) {
          if (err instanceof CniError && err.code !== Code.Internal) return err.message;
          throw err;
        }
      }),
    );
    let discarded = 0;
    for (const [k, f] of files.entries()) {
      journal.remove(f.name);
      const problem = outcomes[k];
      if (problem === undefined && 'entry' in f) {
        const { containerId, ifName, generation } = f.entry;
        log?.info({ containerId, ifName, generation }, 'committed from the journal');
        continue;
      }
      discarded++;
      log?.warn({ entry: f.name, reason: problem }, 'commit journal entry discarded');
    }
    const outcome = { promoted: files.length - discarded, discarded };
    this.#d.onJournalSettled?.(outcome);
    return outcome;
  }

  /** The names of the journal's files now waiting to be settled (for settleJournal({ names }) later). */
  waitingInJournal(): string[] {
    return this.#d.journal?.waiting() ?? [];
  }

  /** Records what the shim built. The generation guards against a commit for an older allocation. */
  commit(containerId: string, req: CommitRequest): Endpoint {
    return this.#tx(() => {
      this.#commit(containerId, req, this.#d.now());
      return this.#endpointOf(containerId);
    });
  }

  /** commit() inside the caller's transaction; the attachment's update time becomes `atMs` (or stays later). */
  #commit(containerId: string, req: CommitRequest, atMs: number): void {
    const { endpoints } = this.#d;
    const a = endpoints.getAttachment(containerId, req.ifName);
    if (!a) {
      throw new CniError(
        Code.EndpointNotFound,
        `commit endpoint ${containerId}/${req.ifName}: no allocation (it was released, or never made)`,
      );
    }
    if (a.network !== req.network) throw conflictingNetwork(a, req.network);
    if (a.id !== req.generation) {
      throw new CniError(
        Code.AttachmentConflict,
        `commit endpoint ${containerId}/${req.ifName}: generation ${req.generation} is stale (current ${a.id})`,
      );
    }
    for (const nic of req.nics) {
      if (!endpoints.commitInterface(a.id, nic.ifName, nic.mac, nic.containerIfIndex)) {
        throw new CniError(
          Code.InvalidConfig,
          `commit endpoint ${containerId}/${req.ifName}: interface "${nic.ifName}" is not part of this attachment`,
        );
      }
    }
    endpoints.markCommitted(a.id, Math.max(a.updated_at_ms, atMs));
  }

  /** Every interface of the container; throws EndpointNotFound when there is none. */
  get(containerId: string): Endpoint {
    const ep = this.#endpointOf(containerId);
    if (ep.interfaces.length === 0) {
      throw new CniError(Code.EndpointNotFound, `endpoint ${containerId}: not found`);
    }
    return ep;
  }

  /**
   * Releases one attachment: addresses into cooldown and state deleted, together. Unknown = success.
   * With `generation`, only that generation is released (another one is left alone, as unknown).
   */
  release(containerId: string, network: string, ifName: string, generation?: number): ReleaseResult {
    return this.#tx(() => {
      const a = this.#releasable(containerId, network, ifName, generation);
      return { released: a ? this.#releaseAttachment(a) : [] };
    });
  }

  /**
   * The shim's one-request DEL: it has already deleted `hostVethDeleted`. An attachment that is that
   * InfraNIC alone is released as by `release`; any other is left as it is and its interfaces returned in
   * `toTearDown` (DelegatedNICs must go home before the release, so a retried DEL still knows where they
   * are; a host veth recorded under another name, by an older ferryd, is still there to delete).
   */
  releaseIfOnly(
    containerId: string,
    network: string,
    ifName: string,
    hostVethDeleted: string,
    generation?: number,
  ): ReleaseResult {
    return this.#tx(() => {
      const { endpoints, ipam } = this.#d;
      const a = this.#releasable(containerId, network, ifName, generation);
      if (!a) return { released: [] };
      const interfaces = endpoints.interfacesOf(a.id);
      const [only, ...more] = interfaces;
      if (more.length === 0 && only?.nic_type === 'InfraNIC' && only.host_veth_name === hostVethDeleted) {
        return { released: this.#releaseAttachment(a) };
      }
      return { released: [], toTearDown: interfaces.map((i) => toRecord(a, i, ipam)) };
    });
  }

  /**
   * Applies a queued DEL. An attachment allocated or committed after the DEL was queued belongs to a
   * re-ADD of the same container and ifName and is left alone ('stale').
   */
  releaseQueued(entry: QueueEntry): 'released' | 'absent' | 'stale' {
    return this.#tx(() => {
      this.#releasesAsked.set(`${entry.containerId}/${entry.ifName}`, this.#d.now());
      const a = this.#d.endpoints.getAttachment(entry.containerId, entry.ifName);
      if (!a || a.network !== entry.network) return 'absent';
      if (a.updated_at_ms > Date.parse(entry.queuedAt)) return 'stale';
      this.#releaseAttachment(a);
      return 'released';
    });
  }

  /** Releases every attachment of a container (operator force-delete). */
  releaseContainer(containerId: string): ReleaseResult {
    return this.#tx(() => ({
      released: this.#d.endpoints.attachmentsOfContainer(containerId).flatMap((a) => this.#releaseAttachment(a)),
    }));
  }

  /** CNI GC: every attachment of the network that is not listed valid is released; errors don't stop it. */
  gc(req: GcRequest): GcResult {
    this.#d.ipam.network(req.network);
    const valid = new Set(req.validAttachments.map((v) => `${v.containerId}/${v.ifName}`));
    const result: GcResult = { removed: [], errors: [] };
    for (const a of this.#d.endpoints.attachmentsOfNetwork(req.network)) {
      if (valid.has(`${a.container_id}/${a.if_name}`)) continue;
      try {
        result.removed.push(...this.release(a.container_id, a.network, a.if_name).released);
      } catch (err) {
        // The disk, not this attachment: every next one would fail the same way, and the route says why.
        if (storageFaultOf(err)) throw err;
        result.errors.push({ containerId: a.container_id, ifName: a.if_name, msg: (err as Error).message });
      }
    }
    return result;
  }

  /** The devices this pod gets: its reservations first, then what the network config asks of a group. */
  #wantedDevices(req: AllocateRequest, others: readonly InterfaceRow[]): WantedDevice[] {
    const { devices } = this.#d;
    const wanted: WantedDevice[] = [];
    const { namespace, name } = req.pod ?? {};
    if (namespace && name) {
      // The pod's other attachments may already hold its reserved devices: those stay where they are.
      const own = new Set(others.map((i) => i.id));
      for (const row of devices.reservedFor(namespace, name)) {
        const reservation = reservationOf(row);
        if (row.interface_id !== null && own.has(row.interface_id)) continue;
        if (row.interface_id !== null) {
          throw new CniError(
            Code.DeviceUnavailable,
            `device ${row.mac} reserved for ${namespace}/${name} is held by another pod`,
          );
        }
        if (!row.present) {
          throw new CniError(
            Code.DeviceUnavailable,
            `device ${row.mac} reserved for ${namespace}/${name} is not on the node`,
          );
        }
        wanted.push({
          row,
          ...(reservation?.ifName ? { ifName: reservation.ifName } : {}),
          ...(reservation ? { reservation } : {}),
        });
      }
    }
    if (req.delegatedNICs) {
      const { group, count } = req.delegatedNICs;
      const free = devices.freeOfGroup(group, count);
      if (free.length < count) {
        throw new CniError(
          Code.DeviceUnavailable,
          `allocate ${count} delegated NICs of group "${group}": only ${free.length} free on this node`,
        );
      }
      for (const row of free) wanted.push({ row });
    }
    return wanted;
  }

  /** Interface rows for the devices, named as reserved or net1, net2, …; each device assigned to its row. */
  #attachDevices(
    req: AllocateRequest,
    attachmentId: number,
    wanted: WantedDevice[],
    others: readonly InterfaceRow[],
  ): void {
    if (wanted.length === 0) return;
    const { endpoints, devices } = this.#d;
    const taken = new Set([req.ifName, ...others.map((i) => i.if_name)]);
    let n = 1;
    for (const [k, w] of wanted.entries()) {
      let ifName = w.ifName;
      if (!ifName) {
        while (taken.has(`net${n}`)) n++;
        ifName = `net${n}`;
      }
      if (taken.has(ifName)) {
        throw new CniError(
          Code.AttachmentConflict,
          `device ${w.row.mac}: interface name "${ifName}" is already used in ${req.containerId}`,
        );
      }
      taken.add(ifName);
      if (!w.row.host_if_name)
        throw new CniError(Code.DeviceUnavailable, `device ${w.row.mac} has never been seen on the node`);
      const interfaceId = endpoints.insertInterface({
        attachmentId,
        position: k + 1,
        containerId: req.containerId,
        ifName,
        endpointId: endpointIdOf('DelegatedNIC', req.containerId, ifName),
        nicType: 'DelegatedNIC',
        routesJson: JSON.stringify(w.reservation?.routes ?? []),
        hostIfName: w.row.host_if_name,
        deviceMac: w.row.mac,
        ...(w.reservation?.addresses.length ? { staticAddressesJson: JSON.stringify(w.reservation.addresses) } : {}),
      });
      if (!devices.assign(w.row.mac, interfaceId)) {
        throw new CniError(Code.DeviceUnavailable, `device ${w.row.mac} was taken by another pod meanwhile`);
      }
    }
  }

  /**
   * Whether a release of (containerId, ifName) was asked for at or after `sinceMs` (node-state/adoption.ts).
   * Entries older than `sinceMs` are dropped: the adoption pass asks once per pass, with its start.
   */
  releaseAskedSince(containerId: string, ifName: string, sinceMs: number): boolean {
    return (this.#releasesAsked.get(`${containerId}/${ifName}`) ?? Number.NEGATIVE_INFINITY) >= sinceMs;
  }

  /** Forgets the release requests older than `beforeMs` (the adoption pass, once it is done). */
  forgetReleasesBefore(beforeMs: number): void {
    for (const [key, atMs] of this.#releasesAsked) if (atMs < beforeMs) this.#releasesAsked.delete(key);
  }

  /** The attachment a release names, unless it is unknown, of another network or another generation. */
  #releasable(containerId: string, network: string, ifName: string, generation?: number): AttachmentRow | undefined {
    this.#releasesAsked.set(`${containerId}/${ifName}`, this.#d.now());
    const a = this.#d.endpoints.getAttachment(containerId, ifName);
    if (!a || a.network !== network) return undefined;
    return generation === undefined || a.id === generation ? a : undefined;
  }

  #releaseAttachment(a: AttachmentRow): InterfaceRecord[] {
    const { endpoints, ipam } = this.#d;
    const interfaces = endpoints.interfacesOf(a.id);
    const records = interfaces.map((i) => toRecord(a, i, ipam));
    const now = this.#d.now();
    for (const i of interfaces) ipam.release(i.id, now);
    endpoints.deleteAttachment(a.id);
    if (interfaces.some((i) => i.nic_type === 'DelegatedNIC')) this.#d.onDevicesReleased?.();
    return records;
  }

  #endpointOf(containerId: string): Endpoint {
    const { endpoints, ipam } = this.#d;
    const interfaces: InterfaceRecord[] = [];
    for (const a of endpoints.attachmentsOfContainer(containerId)) {
      for (const i of endpoints.interfacesOf(a.id)) interfaces.push(toRecord(a, i, ipam));
    }
    return { containerId, interfaces };
  }

  #planOf(a: AttachmentRow): Allocation {
    const { endpoints, ipam } = this.#d;
    const net = ipam.network(a.network);
    const nics: NicPlan[] = endpoints.interfacesOf(a.id).map((i): NicPlan => {
      const addresses = addressesOf(a.network, i, ipam);
      if (i.nic_type === 'InfraNIC') {
        return {
          nicType: 'InfraNIC',
          ifName: i.if_name,
          endpointId: i.endpoint_id,
          hostVethName: i.host_veth_name ?? hostVethNameOf(a.network, a.container_id, a.if_name),
          hostVethMac: HOST_VETH_MAC,
          hostVethAlias: hostVethMarkerOf({
            generation: a.id,
            network: a.network,
            ifName: a.if_name,
            containerId: a.container_id,
            netns: a.netns,
          }),
          addresses,
          routes: routesOf(i),
          ...(net.config.mtu ? { mtu: net.config.mtu } : {}),
        };
      }
      if (!i.device_mac || !i.host_if_name) {
        throw new CniError(Code.Internal, `delegated interface ${a.container_id}/${i.if_name} has no device recorded`);
      }
      return {
        nicType: 'DelegatedNIC',
        ifName: i.if_name,
        endpointId: i.endpoint_id,
        mac: i.device_mac,
        hostIfName: i.host_if_name,
        addresses,
        routes: routesOf(i),
      };
    });
    return {
      network: a.network,
      containerId: a.container_id,
      ifName: a.if_name,
      generation: a.id,
      nics,
      ...(net.config.dns ? { dns: net.config.dns } : {}),
    };
  }
}

function conflictingNetwork(a: AttachmentRow, network: string): CniError {
  return new CniError(
    Code.AttachmentConflict,
    `attachment ${a.container_id}/${a.if_name} belongs to network "${a.network}", not "${network}"`,
  );
}
