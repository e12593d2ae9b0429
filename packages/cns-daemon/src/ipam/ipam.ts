/**
 * IPAM over the store: knows every configured pool, assigns one address per family to an interface and
 * releases an interface's addresses into cooldown. Must be called inside the caller's transaction, so
 * an allocation across families is all-or-nothing.
 */
import type { AssignedAddress } from '@ferry/shared-types/api/common';
import type { FerrydConfig, NetworkConfig } from '@ferry/shared-types/config/ferryd';
import { CniError, Code } from '@ferry/shared-types/errors';
import { StartupError } from '../errors';
import type { PoolStore } from '../store/pools';
import { pickFree } from './allocator';
import { bitsOf, type Cidr, contains, type Family, lastOf, overlaps, parseCidr, toBigInt } from './cidr';
import { offsetHex, type PoolSpec, poolOf, poolSpecsOf, withBlocks } from './pool';

export interface NetworkPools {
  config: NetworkConfig;
  pools: { spec: PoolSpec; poolId: number }[];
  /** Every pool's pod routes as the InfraNIC row stores them (the same for every pod of the network). */
  routesJson: string;
}

export class Ipam {
  readonly #pools: PoolStore;
  readonly #networks = new Map<string, NetworkPools>();
  readonly cooldownMs: number;

  /** Creates or checks the pool rows of every configured network; a renumbered busy pool stops start-up. */
  constructor(pools: PoolStore, config: Pick<FerrydConfig, 'networks' | 'cooldownSec'>) {
    this.#pools = pools;
    this.cooldownMs = Math.round(config.cooldownSec * 1000);
    for (const net of config.networks) {
      const specs = poolSpecsOf(net);
      const entry: NetworkPools = {
        config: net,
        pools: [],
        routesJson: JSON.stringify(specs.flatMap((s) => s.routes)),
      };
      for (const spec of specs) {
        const row = ensurePool(pools, net.name, spec);
        if ('conflict' in row) {
          throw new StartupError(
            `network "${net.name}" IPv${spec.family}: subnet changed from ${row.conflict} to ${spec.subnetText} while ${row.held} addresses are held; release them (or restore the old subnet) first`,
          );
        }
        entry.pools.push({ spec, poolId: row.id });
      }
      this.#networks.set(net.name, entry);
    }
    this.#refuseOverlapWithStored();
  }

  /**
   * A network renamed or removed while its pods still hold addresses keeps its pool rows; a configured
   * pool overlapping them would hand those addresses out a second time.
   */
  #refuseOverlapWithStored(): void {
    const configured = [...this.#networks.values()].flatMap((n) => n.pools);
    for (const row of this.#pools.allPools()) {
      if (configured.some((p) => p.poolId === row.id)) continue;
      const clash = configured.find((p) => overlaps(p.spec.subnet, parseCidr(row.subnet)));
      if (!clash) continue;
      const held = this.#pools.countRows(row.id);
      if (held === 0) continue;
      throw new StartupError(
        `network "${clash.spec.network}" IPv${clash.spec.family}: subnet ${clash.spec.subnetText} overlaps ${row.subnet} of network "${row.network}", which is no longer configured but still holds ${held} addresses; release them (ferryctl endpoints) or configure "${row.network}" again first`,
      );
    }
  }

  /**
   * A range split into blocks hands out the blocks the node holds (the block manager says which, at start
   * and after every claim and release): the next allocation picks from these.
   */
  setBlocks(network: string, family: Family, blocks: readonly Cidr[]): void {
    const pool = this.#networks.get(network)?.pools.find((p) => p.spec.family === family);
    if (!pool?.spec.blocks) throw new Error(`network "${network}" IPv${family} is not split into blocks`);
    pool.spec = withBlocks(pool.spec, blocks);
  }

  /** The network's pools; throws UnknownNetwork naming the configured ones. */
  network(name: string): NetworkPools {
    const n = this.#networks.get(name);
    if (n) return n;
    throw new CniError(
      Code.UnknownNetwork,
      `network "${name}" is not configured in ferryd`,
      `configured networks: ${[...this.#networks.keys()].join(', ')}`,
    );
  }

  networks(): NetworkPools[] {
    return [...this.#networks.values()];
  }

  /** Assigns one address of every family the network serves to `interfaceId`. */
  assign(network: string, interfaceId: number, nowMs: number): void {
    for (const { spec, poolId } of this.network(network).pools) {
      const picked = pickFree(this.#pools, spec, poolId, this.#pools.cursorOf(poolId), nowMs);
      this.#pools.assign(poolId, picked.offsetHex, picked.address, interfaceId, nowMs);
    }
  }

  /** The pool `address` (without prefix length) is in: of network `network`, or of any network. */
  poolOf(address: string, network?: string): { spec: PoolSpec; poolId: number } | undefined {
    const nets = network === undefined ? this.networks() : [this.#networks.get(network)].filter((n) => n !== undefined);
    return poolOf(
      nets.flatMap((n) => n.pools),
      address,
    );
  }

  /** The interface that `address` of pool `poolId` is Assigned to; undefined when none is (free, or cooling down). */
  holderOf(poolId: number, address: string): number | undefined {
    return this.#pools.rowAt(poolId, this.#offsetOf(poolId, address))?.interface_id ?? undefined;
  }

  /**
   * Assigns one particular address of pool `poolId` to `interfaceId` whatever its row says: the node
   * showed it in use (Attachments.adopt).
   */
  claim(poolId: number, address: string, interfaceId: number, nowMs: number): void {
    this.#pools.claim(poolId, this.#offsetOf(poolId, address), address, interfaceId, nowMs);
  }

  #offsetOf(poolId: number, address: string): string {
    const spec = this.networks()
      .flatMap((n) => n.pools)
      .find((p) => p.poolId === poolId)?.spec;
    if (!spec) throw new CniError(Code.Internal, `address ${address}: pool ${poolId} is not configured`);
    return offsetHex(spec, toBigInt(address));
  }

  /**
   * The addresses of `interfaceId`, as the pod carries them (/32 and /128 over an InfraNIC, the subnet's
   * prefix length on a secondary network's segment) with their gateway.
   */
  addressesOf(network: string, interfaceId: number): AssignedAddress[] {
    const pools = this.#networks.get(network)?.pools ?? [];
    return this.#pools.addressesOf(interfaceId).map((row) => {
      const family: Family = row.family;
      const spec = pools.find((p) => p.spec.family === family)?.spec;
      return {
        family,
        address: `${row.address}/${spec?.podPrefix ?? bitsOf(family)}`,
        ...(spec?.gateway ? { gateway: spec.gateway } : {}),
      };
    });
  }

  /** Every address of the interface goes into cooldown. */
  release(interfaceId: number, nowMs: number): number {
    return this.#pools.releaseInterface(interfaceId, nowMs, nowMs + this.cooldownMs);
  }

  /** Free cooled-down addresses; returns how many became Available. */
  sweep(nowMs: number): number {
    return this.#pools.sweepCooledDown(nowMs);
  }
}

/**
 * The pool row of `spec`, created or checked. A pool whose subnet grew into a prefix containing the old one
 * (a node's /24 becoming the cluster's range: docs/runbook.md) is re-based: its addresses keep their
 * values, their offsets are counted from the new base. Any other change is refused while addresses are held.
 */
function ensurePool(pools: PoolStore, network: string, spec: PoolSpec): ReturnType<PoolStore['ensurePool']> {
  const row = pools.ensurePool(network, spec.family, spec.subnetText);
  if (!('conflict' in row)) return row;
  const old = parseCidr(row.conflict);
  const existing = pools.getPool(network, spec.family);
  if (
    !existing ||
    old.family !== spec.family ||
    !contains(spec.subnet, old.base) ||
    !contains(spec.subnet, lastOf(old))
  )
    return row;
  const shift = old.base - spec.subnet.base;
  pools.rebase(existing.id, spec.subnetText, (hex) =>
    (BigInt(`0x${hex}`) + shift).toString(16).padStart(spec.hexWidth, '0'),
  );
  return pools.getPool(network, spec.family) ?? row;
}
