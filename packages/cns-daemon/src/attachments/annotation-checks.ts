/**
 * A pod's `ferry.dev/nics` annotation checked against the node and the namespace's bindings (tenancy.ts).
 * An annotation is a tenant's request (whoever may create a pod may write it), so all of it is checked at
 * every attachment of its pod against what exists and what the namespace may have: an unknown network,
 * group or device, a group not bound to the namespace, a static address outside its ranges or held by
 * another pod, an in-pod name already taken, is refused naming the pod, the annotation, the entry and the
 * problem.
 */
import type { AllocateRequest } from '@ferry/shared-types/api/allocations';
import { POD_NICS_ANNOTATION, type PodNic, type PodNics } from '@ferry/shared-types/kube/pod-nics';
import type { GroupKinds } from '../devices/device-kind';
import { canonicalAddress } from '../ipam/cidr';
import type { AttachmentStore } from '../store/attachments';
import type { DeviceRow, InterfaceRow } from '../store/rows';
import type { DeviceLookup } from './device-lookup';
import { type Asker, PodNicRefusal, type RefusalReason } from './pod-nic-refusal';
import type { Tenancy } from './tenancy';

/** One entry of the annotation, checked, with the device it names (by mac or pciAddress). */
export interface Asked {
  index: number;
  nic: PodNic;
  row?: DeviceRow;
}

export interface AnnotationChecksDeps {
  lookup: DeviceLookup;
  attachmentStore: AttachmentStore;
  tenancy: Tenancy;
  /** Whether ferryd has the network (an annotation entry's `network`). */
  hasNetwork(name: string): boolean;
  /** The groups served to the kubelet as resources. */
  served: ReadonlySet<string>;
  /** Which groups hold userspace devices (an entry asks for one with `userspace: true`). */
  kinds: GroupKinds;
}

type Refuse = (reason: RefusalReason, field: string, problem: string) => PodNicRefusal;

export class AnnotationChecks {
  readonly #deps: AnnotationChecksDeps;

  constructor(deps: AnnotationChecksDeps) {
    this.#deps = deps;
  }

  /** Every entry against what exists on this node and what the namespace may have. */
  check(who: Asker, namespace: string, nics: PodNics): Asked[] {
    const { tenancy, lookup } = this.#deps;
    return nics.map((nic, index): Asked => {
      const refuse: Refuse = (reason, field, problem) =>
        new PodNicRefusal(reason, `${who.pod}: annotation ${POD_NICS_ANNOTATION}: [${index}].${field}: ${problem}`);
      if (nic.network !== undefined && !this.#deps.hasNetwork(nic.network)) {
        throw refuse('unknown', 'network', `ferryd has no network "${nic.network}"`);
      }
      this.#checkAddresses(nic, namespace, who, refuse);
      if (nic.group !== undefined) {
        if (!tenancy.knownGroups.has(nic.group)) {
          const open = tenancy.groupsOpenTo(namespace);
          throw refuse(
            'unknown',
            'group',
            `no device group "${nic.group}" on this node (${openGroups(namespace, open)})`,
          );
        }
        if (!this.#mayAsk(nic.group, namespace)) {
          throw refuse('not-allowed', 'group', `namespace ${namespace} may not use device group "${nic.group}"`);
        }
        this.#checkKind(nic, nic.group, undefined, refuse);
        return { index, nic };
      }
      const [field, row] =
        nic.mac !== undefined
          ? ['mac', lookup.byMac(nic.mac)]
          : ['pciAddress', nic.pciAddress ? lookup.byPci(nic.pciAddress) : undefined];
      const named = nic.mac ?? nic.pciAddress ?? '';
      if (!row) throw refuse('unknown', field, `no delegatable device ${named} on this node`);
      if (!this.#mayAsk(row.grp, namespace)) {
        throw refuse('not-allowed', field, `namespace ${namespace} may not use device ${named}`);
      }
      this.#checkKind(nic, row.grp, named, refuse);
      return { index, nic, row };
    });
  }

  /**
   * A served group's devices are the kubelet's allocation, which ResourceQuota and admission govern per
   * namespace: an annotation only names and addresses them, so a group bound to no namespace is open to it.
   */
  #mayAsk(group: string, namespace: string): boolean {
    return this.#deps.served.has(group)
      ? this.#deps.tenancy.mayGive(group, namespace)
      : this.#deps.tenancy.mayAsk(group, namespace);
  }

  /**
   * A userspace device (no netdev) is asked for as one (`userspace: true`), a netdev as a netdev: the
   * other kind would be half of what the pod expects (a link it cannot open with DPDK, or no link at all).
   */
  #checkKind(nic: PodNic, group: string, device: string | undefined, refuse: Refuse): void {
    const kind = this.#deps.kinds.of(group);
    if ((kind === 'userspace') === (nic.userspace === true)) return;
    const what = device === undefined ? `device group "${group}"` : `device ${device} of group "${group}"`;
    const field = device === undefined ? 'group' : nic.mac !== undefined ? 'mac' : 'pciAddress';
    throw refuse(
      'malformed',
      field,
      kind === 'userspace'
        ? `${what} is a userspace device (bound to vfio-pci, no netdev), asked for as a netdev: ask with "userspace": true`
        : `${what} is a netdev, asked for as a userspace device ("userspace": true): ask without it, or for a device of a group of userspace devices (drivers ["vfio-pci"])`,
    );
  }

  /** Static addresses: only inside the ranges bound to the namespace, never one another pod holds. */
  #checkAddresses(nic: PodNic, namespace: string, who: Asker, refuse: Refuse): void {
    if (!nic.addresses) return;
    const { tenancy } = this.#deps;
    const ranges = tenancy.rangesOf(namespace);
    if (ranges.length === 0) {
      throw refuse('not-allowed', 'addresses', `namespace ${namespace} may give no static addresses`);
    }
    const held = this.#heldByOthers(who);
    for (const [j, address] of nic.addresses.entries()) {
      if (!tenancy.rangeFor(address, namespace)) {
        throw refuse(
          'not-allowed',
          `addresses[${j}]`,
          `${address} is outside the ranges of namespace ${namespace} (${ranges.join(', ')})`,
        );
      }
      if (held.has(hostOf(address))) {
        throw refuse('unavailable', `addresses[${j}]`, `${address} is in use by another pod`);
      }
    }
  }

  /** The static addresses other pods' interfaces hold (the same pod's other sandbox is the same pod). */
  #heldByOthers(who: Asker): Set<string> {
    const held = new Set<string>();
    for (const r of this.#deps.attachmentStore.staticAddresses()) {
      if (r.pod_namespace === who.namespace && r.pod_name === who.name) continue;
      for (const a of JSON.parse(r.json) as { address: string }[]) held.add(hostOf(a.address));
    }
    return held;
  }
}

/**
 * The in-pod names an InfraNIC attachment's entries ask for: never its own CNI_IFNAME (the pod's primary
 * interface, which the InfraNIC is), never a name the pod's other attachments already use.
 */
export function checkNames(
  req: AllocateRequest,
  who: Asker,
  mine: readonly Asked[],
  others: readonly InterfaceRow[],
): void {
  for (const { index, nic } of mine) {
    if (nic.ifName === undefined) continue;
    const clash =
      nic.ifName === req.ifName
        ? "is the pod's primary interface"
        : others.some((i) => i.if_name === nic.ifName)
          ? 'is already an interface of the pod'
          : undefined;
    if (clash) {
      throw new PodNicRefusal(
        'malformed',
        `${who.pod}: annotation ${POD_NICS_ANNOTATION}: [${index}].ifName: "${nic.ifName}" ${clash}`,
      );
    }
  }
}

/**
 * The annotation's entry for a secondary network's attachment: the one naming this network with this
 * CNI_IFNAME, else its only entry for this network (without an ifName).
 */
export function entryFor(req: AllocateRequest, who: Asker, asked: readonly Asked[]): Asked | undefined {
  const forNetwork = asked.filter((a) => a.nic.network === req.network);
  const exact = forNetwork.find((a) => a.nic.ifName === req.ifName);
  if (exact) return exact;
  const unnamed = forNetwork.filter((a) => a.nic.ifName === undefined);
  if (unnamed.length > 1) {
    throw new PodNicRefusal(
      'malformed',
      `${who.pod}: annotation ${POD_NICS_ANNOTATION}: entries ${unnamed.map((a) => `[${a.index}]`).join(', ')} are all for network "${req.network}": give each the ifName of its attachment`,
    );
  }
  return unnamed[0];
}

/** How messages name an annotation entry. */
export function entryOf(who: Asker, a: Asked): string {
  const field = a.nic.mac !== undefined ? 'mac' : a.nic.pciAddress !== undefined ? 'pciAddress' : 'group';
  return `${who.pod}: annotation ${POD_NICS_ANNOTATION}: [${a.index}].${field}`;
}

function openGroups(namespace: string, open: readonly string[]): string {
  return open.length > 0
    ? `groups namespace ${namespace} may use: ${open.join(', ')}`
    : `namespace ${namespace} may use none`;
}

/** An address without its prefix length, in the kernel's spelling: how two spellings of one address compare. */
function hostOf(address: string): string {
  const slash = address.lastIndexOf('/');
  return canonicalAddress(slash < 0 ? address : address.slice(0, slash));
}
