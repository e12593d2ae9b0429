/**
 * The state machine behind the shim API: allocate → commit → release, plus GC and force-delete. Every
 * change to an attachment is atomic: one SQLite transaction, or one savepoint of the shared transaction
 * when the shim's requests are grouped (store/group-commit.ts); GC makes one per attachment it releases.
 * So addresses and endpoint state always change together (the split Azure's CNS suffers from, issue
 * #4829, cannot happen here).
 */
import type { AllocateRequest, Allocation, NicPlan } from '@ferry/shared-types/api/allocations';
import type { CommitRequest, Endpoint, InterfaceRecord, ReleaseResult } from '@ferry/shared-types/api/endpoints';
import type { GcRequest, GcResult } from '@ferry/shared-types/api/gc';
import type { QueueEntry } from '@ferry/shared-types/api/queue';
import { CniError, Code } from '@ferry/shared-types/errors';
import { HOST_VETH_MAC } from '@ferry/shared-types/host-veth';
import type { PodNics } from '@ferry/shared-types/kube/pod-nics';
import { hostVethMarkerOf } from '@ferry/shared-types/link-marker';
import { endpointIdOf } from '@ferry/shared-types/nic';
import type { Logger } from 'pino';
import type { KubeletAllocation } from '../device-plugin/served';
import { isPciId } from '../devices/identity';
import type { PciAddresses } from '../devices/pci';
import type { Ipam } from '../ipam/ipam';
import { storageFaultOf } from '../storage/fault';
import { AdoptedStore } from '../store/adopted';
import type { AttachmentStore } from '../store/attachments';
import { type Db, transactionRunner } from '../store/db';
import type { DeviceStore } from '../store/devices';
import type { AttachmentRow, InterfaceRow } from '../store/rows';
import { type AdoptionPlan, type AdoptionWritten, writeAdoption } from './adoption-plan';
import type { JournalDir } from './commit-journal';
import type { WantedDevice } from './free-devices';
import { entryFileNameOf, hostVethNameOf } from './host-veth';
import { NicChoice } from './nic-choice';
import { addressesOf, routesOf, toRecord } from './records';
import { Tenancy } from './tenancy';

export interface AttachmentsDeps {
  db: Db;
  attachmentStore: AttachmentStore;
  devices: DeviceStore;
  ipam: Ipam;
  now: () => number;
  /** The commit journal, when ferryd reads one (settleJournal); its log lines go to `log`. */
  journal?: JournalDir;
  log?: Logger;
  /** Told how many journal entries each settle promoted and discarded (the metric counts them). */
  onJournalSettled?: (outcome: { promoted: number; discarded: number }) => void;
  /** Who may ask for which devices and addresses (default: no bindings). */
  tenancy?: Tenancy;
  /** sysfs, for devices by PCI address (default: none can be asked for by one). */
  pci?: PciAddresses;
  /** The device groups served to the kubelet as resources (default: none). */
  served?: ReadonlySet<string>;
}

/** The key of one attachment. */
export type AttachmentKey = Pick<AllocateRequest, 'network' | 'containerId' | 'ifName'>;

export class Attachments {
  readonly #deps: AttachmentsDeps;
  readonly #tx: <T>(fn: () => T) => T;
  /**
   * When each attachment key was last asked to be released (found or not): the node-state adoption reads
   * a host veth outside any transaction, and must not bring back an attachment whose DEL ran meanwhile.
   */
  readonly #releasesAsked = new Map<string, number>();
  readonly #choice: NicChoice;
  readonly #adopted: AdoptedStore;
  #devicesReleased: () => void = () => undefined;
  #podChanged: (pod: { namespace: string; name: string }) => void = () => undefined;

  constructor(deps: AttachmentsDeps) {
    this.#deps = deps;
    this.#tx = transactionRunner(deps.db);
    this.#adopted = new AdoptedStore(deps.db);
    this.#choice = new NicChoice({
      devices: deps.devices,
      attachmentStore: deps.attachmentStore,
      tenancy: deps.tenancy ?? new Tenancy({ deviceGroups: [], staticAddresses: [] }, []),
      ...(deps.pci ? { pci: deps.pci } : {}),
      ...(deps.served ? { served: deps.served } : {}),
      hasNetwork: (name) => deps.ipam.networks().some((n) => n.config.name === name),
    });
  }

  /**
   * `listener` is called (inside the releasing transaction: it must only schedule work) whenever a
   * release frees delegated devices, whoever released them: the shim, GC, a queued DEL, an operator.
   */
  onDevicesReleased(listener: () => void): void {
    this.#devicesReleased = listener;
  }

  /**
   * `listener` is called (inside the transaction: it must only schedule work) whenever an attachment
   * made for a Kubernetes pod is committed or released, whoever did it: the shim (a PUT, a promoted
   * commit-journal entry, a DEL), a queued DEL, GC, the stale-endpoint sweep, an operator's force-delete.
   */
  onPodChanged(listener: (pod: { namespace: string; name: string }) => void): void {
    this.#podChanged = listener;
  }

  /**
   * Idempotent per (network, containerId, ifName) until commit: the same request returns the same plan
   * (an ADD retried after it was interrupted). `created` tells a new attachment from a repeated one.
   * `nics`: the pod's `ferry.dev/nics` annotation, when it has one (it decides the delegated NICs:
   * nic-choice.ts); `allocated`: the devices the kubelet allocated to the pod, when ferryd serves groups
   * to it. A request it refuses stores nothing.
   */
  allocate(
    req: AllocateRequest,
    nics?: PodNics,
    allocated?: KubeletAllocation,
  ): { plan: Allocation; created: boolean } {
    return this.#tx(() => {
      const { attachmentStore, ipam } = this.#deps;
      const existing = attachmentStore.getAttachment(req.containerId, req.ifName);
      if (existing) {
        if (existing.network !== req.network) throw conflictingNetwork(existing, req.network);
        if (existing.state === 'committed') {
          throw new CniError(
            Code.AttachmentConflict,
            `allocate ${req.containerId}/${req.ifName}: the attachment is already set up (committed at ${new Date(existing.updated_at_ms).toISOString()}); DEL it before adding it again`,
          );
        }
        // A DEL queued before this moment must not release what this ADD is about to build.
        attachmentStore.touch(existing.generation, this.#deps.now());
        return { plan: this.#planOf(existing), created: false };
      }
      // The container's other interfaces: a name this one must not take, devices it already holds.
      const others = attachmentStore.interfacesOfContainer(req.containerId);
      if (others.some((i) => i.if_name === req.ifName)) {
        throw new CniError(
          Code.AttachmentConflict,
          `allocate ${req.containerId}/${req.ifName}: "${req.ifName}" is already a delegated interface of this container`,
        );
      }
      const net = ipam.network(req.network);
      const wanted = this.#choice.choose(req, net.config, others, nics, allocated);
      const now = this.#deps.now();
      const attachment = attachmentStore.insertAttachment({
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
      if (net.config.infraNIC) {
        const infraId = attachmentStore.insertInterface({
          attachmentId: attachment.generation,
          position: 0,
          containerId: req.containerId,
          ifName: req.ifName,
          endpointId: endpointIdOf('InfraNIC', req.containerId, req.ifName),
          nicType: 'InfraNIC',
          routesJson: net.routesJson,
          hostVethName: hostVethNameOf(req.network, req.containerId, req.ifName),
        });
        ipam.assign(req.network, infraId, now);
      }
      // A secondary network's attachment is its one device, first and alone.
      this.#attachDevices(req, attachment.generation, wanted, others, net.config.infraNIC ? 1 : 0, net.routesJson);
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
    const { journal, db, log } = this.#deps;
    if (!journal) return { promoted: 0, discarded: 0 };
    const names = !scope
      ? undefined
      : 'names' in scope
        ? scope.names
        : [entryFileNameOf(scope.attachment.network, scope.attachment.containerId, scope.attachment.ifName)];
    const files = names ? names.flatMap((n) => journal.read(n) ?? []) : journal.list(this.#deps.now());
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
    this.#deps.onJournalSettled?.(outcome);
    return outcome;
  }

  /** The names of the journal's files now waiting to be settled (for settleJournal({ names }) later). */
  waitingInJournal(): string[] {
    return this.#deps.journal?.waiting() ?? [];
  }

  /** Records what the shim built. The generation guards against a commit for an older allocation. */
  commit(containerId: string, req: CommitRequest): Endpoint {
    return this.#tx(() => {
      this.#commit(containerId, req, this.#deps.now());
      return this.#endpointOf(containerId);
    });
  }

  /** commit() inside the caller's transaction; the attachment's update time becomes `atMs` (or stays later). */
  #commit(containerId: string, req: CommitRequest, atMs: number): void {
    const { attachmentStore } = this.#deps;
    const a = attachmentStore.getAttachment(containerId, req.ifName);
    if (!a) {
      throw new CniError(
        Code.EndpointNotFound,
        `commit endpoint ${containerId}/${req.ifName}: no allocation (it was released, or never made)`,
      );
    }
    if (a.network !== req.network) throw conflictingNetwork(a, req.network);
    if (a.generation !== req.generation) {
      throw new CniError(
        Code.AttachmentConflict,
        `commit endpoint ${containerId}/${req.ifName}: generation ${req.generation} is stale (current ${a.generation})`,
      );
    }
    for (const nic of req.nics) {
      if (!attachmentStore.commitInterface(a.generation, nic.ifName, nic.mac, nic.containerIfIndex)) {
        throw new CniError(
          Code.InvalidConfig,
          `commit endpoint ${containerId}/${req.ifName}: interface "${nic.ifName}" is not part of this attachment`,
        );
      }
    }
    attachmentStore.markCommitted(a.generation, Math.max(a.updated_at_ms, atMs));
    this.#changedPodOf(a);
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
   * The shim's one-request DEL: it has already deleted the InfraNIC's host veth (named after the
   * attachment). An attachment that is that InfraNIC alone is released as by `release`; any other is left
   * as it is and its interfaces returned in `toTearDown` (DelegatedNICs must go home before the release,
   * so a retried DEL still knows where they are).
   */
  releaseIfOnly(containerId: string, network: string, ifName: string, generation?: number): ReleaseResult {
    return this.#tx(() => {
      const { attachmentStore, ipam } = this.#deps;
      const a = this.#releasable(containerId, network, ifName, generation);
      if (!a) return { released: [] };
      const interfaces = attachmentStore.interfacesOf(a.generation);
      if (interfaces.length === 1 && interfaces[0]?.nic_type === 'InfraNIC') {
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
      this.#releasesAsked.set(`${entry.containerId}/${entry.ifName}`, this.#deps.now());
      const a = this.#deps.attachmentStore.getAttachment(entry.containerId, entry.ifName);
      if (!a || a.network !== entry.network) return 'absent';
      if (a.updated_at_ms > Date.parse(entry.queuedAt)) return 'stale';
      this.#releaseAttachment(a);
      return 'released';
    });
  }

  /** Releases every attachment of a container (operator force-delete). */
  releaseContainer(containerId: string): ReleaseResult {
    return this.#tx(() => ({
      released: this.#deps.attachmentStore
        .attachmentsOfContainer(containerId)
        .flatMap((a) => this.#releaseAttachment(a)),
    }));
  }

  /** CNI GC: every attachment of the network that is not listed valid is released; errors don't stop it. */
  gc(req: GcRequest): GcResult {
    this.#deps.ipam.network(req.network);
    const valid = new Set(req.validAttachments.map((v) => `${v.containerId}/${v.ifName}`));
    const result: GcResult = { removed: [], errors: [] };
    for (const a of this.#deps.attachmentStore.attachmentsOfNetwork(req.network)) {
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

  /**
   * Interface rows for the devices, from `position` on: named as wanted (a secondary network's device is
   * CNI_IFNAME) or net1, net2, …; each device assigned to its row, and a pooled one given its addresses.
   */
  #attachDevices(
    req: AllocateRequest,
    attachmentId: number,
    wanted: readonly WantedDevice[],
    others: readonly InterfaceRow[],
    position: number,
    routesJson: string,
  ): void {
    const { attachmentStore, devices, ipam } = this.#deps;
    const taken = new Set([...(position > 0 ? [req.ifName] : []), ...others.map((i) => i.if_name)]);
    // A name a device asks for is its own: the unnamed ones take the next netN that nobody asked for.
    const asked = new Set(wanted.flatMap((w) => (w.ifName ? [w.ifName] : [])));
    let n = 1;
    for (const [k, w] of wanted.entries()) {
      let ifName = w.ifName;
      if (!ifName) {
        while (taken.has(`net${n}`) || asked.has(`net${n}`)) n++;
        ifName = `net${n}`;
      }
      if (taken.has(ifName)) {
        throw new CniError(
          Code.AttachmentConflict,
          `device ${w.row.id}: interface name "${ifName}" is already used in ${req.containerId}`,
        );
      }
      taken.add(ifName);
      if (!w.row.host_if_name || !w.row.mac)
        throw new CniError(Code.DeviceUnavailable, `device ${w.row.id} has never been seen on the node`);
      const interfaceId = attachmentStore.insertInterface({
        attachmentId,
        position: position + k,
        containerId: req.containerId,
        ifName,
        endpointId: endpointIdOf('DelegatedNIC', req.containerId, ifName),
        nicType: 'DelegatedNIC',
        routesJson: w.pooled ? routesJson : JSON.stringify(w.routes),
        hostIfName: w.row.host_if_name,
        deviceMac: w.row.mac,
        ...(w.statics.length ? { staticAddressesJson: JSON.stringify(w.statics) } : {}),
      });
      if (!devices.assign(w.row.id, interfaceId)) {
        throw new CniError(Code.DeviceUnavailable, `device ${w.row.id} was taken by another pod meanwhile`);
      }
      if (w.pooled) ipam.assign(req.network, interfaceId, this.#deps.now());
    }
  }

  /**
   * Writes what the node showed that the database lacks (adoption-plan.ts says how), in one transaction;
   * one outcome per planned attachment.
   */
  adopt(plan: AdoptionPlan): AdoptionWritten[] {
    return this.#tx(() =>
      writeAdoption(plan, {
        attachmentStore: this.#deps.attachmentStore,
        adopted: this.#adopted,
        devices: this.#deps.devices,
        ipam: this.#deps.ipam,
        nowMs: this.#deps.now(),
        releaseAskedSince: (containerId, ifName, sinceMs) => this.releaseAskedSince(containerId, ifName, sinceMs),
        release: (a) => this.#releaseAttachment(a),
      }),
    );
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
    this.#releasesAsked.set(`${containerId}/${ifName}`, this.#deps.now());
    const a = this.#deps.attachmentStore.getAttachment(containerId, ifName);
    if (!a || a.network !== network) return undefined;
    return generation === undefined || a.generation === generation ? a : undefined;
  }

  #releaseAttachment(a: AttachmentRow): InterfaceRecord[] {
    const { attachmentStore, ipam } = this.#deps;
    const interfaces = attachmentStore.interfacesOf(a.generation);
    const records = interfaces.map((i) => toRecord(a, i, ipam));
    const now = this.#deps.now();
    for (const i of interfaces) ipam.release(i.id, now);
    attachmentStore.deleteAttachment(a.generation);
    if (interfaces.some((i) => i.nic_type === 'DelegatedNIC')) this.#devicesReleased();
    this.#changedPodOf(a);
    return records;
  }

  #changedPodOf(a: AttachmentRow): void {
    if (a.pod_namespace !== null && a.pod_name !== null) {
      this.#podChanged({ namespace: a.pod_namespace, name: a.pod_name });
    }
  }

  #endpointOf(containerId: string): Endpoint {
    const { attachmentStore, ipam } = this.#deps;
    const interfaces: InterfaceRecord[] = [];
    for (const a of attachmentStore.attachmentsOfContainer(containerId)) {
      for (const i of attachmentStore.interfacesOf(a.generation)) interfaces.push(toRecord(a, i, ipam));
    }
    return { containerId, interfaces };
  }

  #planOf(a: AttachmentRow): Allocation {
    const { attachmentStore, ipam } = this.#deps;
    const net = ipam.network(a.network);
    const nics: NicPlan[] = attachmentStore.interfacesOf(a.generation).map((i): NicPlan => {
      const addresses = addressesOf(a.network, i, ipam);
      if (i.nic_type === 'InfraNIC') {
        return {
          nicType: 'InfraNIC',
          ifName: i.if_name,
          endpointId: i.endpoint_id,
          hostVethName: hostVethNameOf(a.network, a.container_id, a.if_name),
          hostVethMac: HOST_VETH_MAC,
          hostVethAlias: hostVethMarkerOf({
            generation: a.generation,
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
      const held = this.#deps.devices.ofInterface(i.id);
      const pciAddress = held && isPciId(held.id) ? held.id : this.#deps.pci?.pciOf(i.device_mac);
      return {
        nicType: 'DelegatedNIC',
        ifName: i.if_name,
        endpointId: i.endpoint_id,
        mac: i.device_mac,
        hostIfName: i.host_if_name,
        ...(pciAddress ? { pciAddress } : {}),
        addresses,
        routes: routesOf(i),
      };
    });
    return {
      network: a.network,
      containerId: a.container_id,
      ifName: a.if_name,
      generation: a.generation,
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
