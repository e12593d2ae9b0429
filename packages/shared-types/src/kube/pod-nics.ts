/**
 * The pod annotation `ferry.dev/nics`: how a pod asks for its delegated NICs (docs/architecture.md "Which
 * pods get which NICs"). A JSON list, one entry per NIC, each asking for a device by exactly one of
 * `group`, `mac` or `pciAddress`, with an optional in-pod name, optional static addressing (what Azure
 * SwiftV2's per-pod object carries), for a secondary network's attachment that network's name, and
 * `userspace` for a device with no netdev (vfio-pci). Whoever
 * may create a pod may write it, so everything is bounded and strict: unknown keys, duplicates and the
 * pod's primary interface name are refused, naming the entry and field.
 */
import * as z from 'zod/mini';
import { PciAddressSchema } from '../api/common';
import { IfNameSchema, NetworkNameSchema } from '../cni/names';
import { readJsonAs } from '../parse';

/** The annotation's key. */
export const POD_NICS_ANNOTATION = 'ferry.dev/nics';
/** At most this many delegated NICs per pod. */
export const MAX_POD_NICS = 8;
/** An annotation longer than this is refused before it is parsed. */
export const MAX_POD_NICS_LENGTH = 16 * 1024;
const MAX_ADDRESSES = 4;
const MAX_ROUTES = 16;
/** Names a pod's delegated NIC can never take: the loopback and the primary (InfraNIC) interface. */
const RESERVED_IF_NAMES = new Set(['lo', 'eth0']);

const ip = () => z.union([z.ipv4(), z.ipv6()]);
const familyOf = (address: string): 4 | 6 => (address.includes(':') ? 6 : 4);

const PodNicRouteSchema = z.strictObject({
  dst: z.union([z.cidrv4(), z.cidrv6()]),
  gw: z.optional(ip()),
});

const PodNicFields = z.strictObject({
  /**
   * The Ferry network whose attachment gets this NIC. Absent: the pod's attachment on its primary
   * interface (CNI_IFNAME eth0, an InfraNIC network). A secondary network (`infraNIC: false`) takes the
   * entry naming it whose ifName is its CNI_IFNAME (or its only entry, without ifName).
   */
  network: z.optional(NetworkNameSchema),
  /** A device group of ferryd's `delegatedDevices` (group names follow network names' rules). */
  group: z.optional(NetworkNameSchema),
  mac: z.optional(z.mac()),
  pciAddress: z.optional(PciAddressSchema),
  ifName: z.optional(
    IfNameSchema.clone().check(
      z.refine((n) => !RESERVED_IF_NAMES.has(n), { message: 'is reserved (the loopback or the primary interface)' }),
    ),
  ),
  addresses: z.optional(z.array(z.union([z.cidrv4(), z.cidrv6()])).check(z.minLength(1), z.maxLength(MAX_ADDRESSES))),
  gateway: z.optional(ip()),
  routes: z.optional(z.array(PodNicRouteSchema).check(z.maxLength(MAX_ROUTES))),
  /**
   * `true`: the pod asks for a userspace device (a VF bound to vfio-pci, for DPDK: no netdev, opened
   * through /dev/vfio), of a group whose devices are; absent or `false`: a netdev, moved into the pod.
   * Either ask for a device of the other kind is refused (116), naming the device and its group.
   */
  userspace: z.optional(z.boolean()),
});

/** One delegated NIC a pod asks for. */
export const PodNicSchema = PodNicFields.check(
  z.superRefine((nic, ctx) => {
    const asked = (['group', 'mac', 'pciAddress'] as const).filter((k) => nic[k] !== undefined);
    if (asked.length !== 1) {
      const message =
        asked.length === 0 ? 'needs one of group, mac or pciAddress' : `gives ${asked.join(' and ')}: give only one`;
      ctx.addIssue({ code: 'custom', message, input: nic });
    }
    if (nic.userspace) {
      for (const k of ['addresses', 'gateway', 'routes'] as const) {
        if (nic[k] === undefined) continue;
        const message = 'is for a netdev: a userspace device (userspace: true) has none to configure';
        ctx.addIssue({ code: 'custom', message, path: [k], input: nic[k] });
      }
    }
    const families = new Set((nic.addresses ?? []).map((a) => familyOf(a)));
    if (nic.gateway !== undefined && !families.has(familyOf(nic.gateway))) {
      ctx.addIssue({ code: 'custom', message: 'has no address of its family', path: ['gateway'], input: nic.gateway });
    }
    for (const [i, r] of (nic.routes ?? []).entries()) {
      const family = familyOf(r.dst);
      const via = r.gw ?? (nic.gateway !== undefined && familyOf(nic.gateway) === family ? nic.gateway : undefined);
      if (r.gw !== undefined && familyOf(r.gw) !== family) {
        ctx.addIssue({
          code: 'custom',
          message: 'is not of the family of dst',
          path: ['routes', i, 'gw'],
          input: r.gw,
        });
      } else if (via !== undefined && !families.has(family)) {
        ctx.addIssue({
          code: 'custom',
          message: 'has a next hop but the NIC no address of its family',
          path: ['routes', i],
          input: r,
        });
      }
    }
  }),
);
export type PodNic = z.infer<typeof PodNicSchema>;

/** The whole annotation: at most MAX_POD_NICS entries; in-pod names, MACs, PCI addresses and addresses unique. */
export const PodNicsSchema = z.array(PodNicSchema).check(
  z.maxLength(MAX_POD_NICS),
  z.superRefine((nics, ctx) => {
    const unique = (field: 'ifName' | 'mac' | 'pciAddress', norm: (v: string) => string = (v) => v) => {
      const seen = new Map<string, number>();
      for (const [i, nic] of nics.entries()) {
        const value = nic[field];
        if (value === undefined) continue;
        const first = seen.get(norm(value));
        if (first !== undefined) {
          ctx.addIssue({ code: 'custom', message: `is also entry [${first}]'s`, path: [i, field], input: value });
        } else seen.set(norm(value), i);
      }
    };
    unique('ifName');
    unique('mac', (m) => m.toLowerCase().replaceAll('-', ':'));
    unique('pciAddress');
    const addresses = new Map<string, number>();
    for (const [i, nic] of nics.entries()) {
      for (const [j, a] of (nic.addresses ?? []).entries()) {
        const host = a.slice(0, a.indexOf('/')).toLowerCase();
        const first = addresses.get(host);
        if (first !== undefined && first !== i) {
          ctx.addIssue({ code: 'custom', message: `is also entry [${first}]'s`, path: [i, 'addresses', j], input: a });
        }
        addresses.set(host, i);
      }
    }
  }),
);
export type PodNics = z.infer<typeof PodNicsSchema>;

/**
 * Reads the annotation's text: the NICs it asks for, or the problem (`[1].mac: not a valid mac`,
 * `not JSON: …`), for the caller to name the pod and the annotation. An empty list is an answer: the pod
 * asks for no delegated NIC (it wins over the network's `delegatedNICs`).
 */
export function parsePodNics(text: string): { nics: PodNics } | { problem: string } {
  if (text.length > MAX_POD_NICS_LENGTH) {
    return { problem: `is ${text.length} characters long; at most ${MAX_POD_NICS_LENGTH} are read` };
  }
  const r = readJsonAs(PodNicsSchema, text);
  return 'value' in r ? { nics: r.value } : r;
}
