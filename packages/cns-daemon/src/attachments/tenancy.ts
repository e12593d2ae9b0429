/**
 * Who may ask for what (ferryd's `tenancy`): whoever may create a pod may write its annotations, so in a
 * multitenant cluster a pod's `ferry.dev/nics` is a tenant's request. A device group bound to namespaces
 * serves pods of those namespaces only, whatever asks for it; an annotation may name only devices of a
 * group bound to its pod's namespace (a group bound to none is the operator's, given by conflists and
 * reservations); static addresses only inside the ranges bound to the namespace. config.ts has checked
 * that every bound group exists and that no two namespaces' ranges overlap, nor a range a network's
 * subnet.
 */
import type { TenancyConfig } from '@ferry/shared-types/config/ferryd';
import { type Cidr, contains, familyOf, formatCidr, parseCidr, toBigInt } from '../ipam/cidr';

const EVERY_NAMESPACE = '*';

export class Tenancy {
  readonly #groups = new Map<string, ReadonlySet<string>>();
  readonly #ranges: { namespaces: ReadonlySet<string>; cidr: Cidr }[];
  /** Every group of the inventory's config. */
  readonly knownGroups: ReadonlySet<string>;

  constructor(config: TenancyConfig, knownGroups: Iterable<string>) {
    this.knownGroups = new Set(knownGroups);
    for (const b of config.deviceGroups) {
      const had = this.#groups.get(b.group) ?? new Set<string>();
      this.#groups.set(b.group, new Set([...had, ...b.namespaces]));
    }
    this.#ranges = config.staticAddresses.flatMap((b) =>
      b.ranges.map((r) => ({ namespaces: new Set(b.namespaces), cidr: parseCidr(r) })),
    );
  }

  /** True when the operator bound the group to namespaces (its devices are theirs alone). */
  isBound(group: string): boolean {
    return this.#groups.has(group);
  }

  /** True when a pod of `namespace` may have devices of `group` asked for by the operator's config. */
  mayGive(group: string, namespace: string | undefined): boolean {
    const bound = this.#groups.get(group);
    return bound === undefined || isIn(bound, namespace);
  }

  /** True when a pod of `namespace` may ask for devices of `group` in its annotation. */
  mayAsk(group: string, namespace: string): boolean {
    const bound = this.#groups.get(group);
    return bound !== undefined && isIn(bound, namespace);
  }

  /** The groups `namespace`'s annotations may name (for error messages). */
  groupsOpenTo(namespace: string): string[] {
    return [...this.#groups].filter(([, ns]) => isIn(ns, namespace)).map(([g]) => g);
  }

  /** The bound range holding `address` (`a.b.c.d/len` or a bare address) for `namespace`, if any. */
  rangeFor(address: string, namespace: string): string | undefined {
    const ip = address.includes('/') ? address.slice(0, address.lastIndexOf('/')) : address;
    const family = familyOf(ip);
    const n = toBigInt(ip);
    const r = this.#ranges.find(
      (x) => x.cidr.family === family && isIn(x.namespaces, namespace) && contains(x.cidr, n),
    );
    return r ? formatCidr(r.cidr) : undefined;
  }

  /** The ranges bound to `namespace` (for error messages). */
  rangesOf(namespace: string): string[] {
    return this.#ranges.filter((r) => isIn(r.namespaces, namespace)).map((r) => formatCidr(r.cidr));
  }
}

const isIn = (namespaces: ReadonlySet<string>, namespace: string | undefined) =>
  namespaces.has(EVERY_NAMESPACE) || (namespace !== undefined && namespaces.has(namespace));
