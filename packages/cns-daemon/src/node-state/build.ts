/**
 * The node as ferryd's second source of truth, assembled: adoption of what the database lacks, the
 * reboot check, what ferryctl doctor and the metrics say about both and about a database moved aside.
 */
import type { Violation } from '@ferry/shared-types/api/operator';
import { Counter, Gauge, type Registry } from 'prom-client';
import { AdoptedStore } from '../store/adopted';
import type { Db } from '../store/db';
import { NodeStateStore } from '../store/node-state';
import type { PoolStore } from '../store/pools';
import { keptCopies, type MovedAside } from '../store/recovery';
import { Adoption, type AdoptionDeps } from './adoption';
import { BootCheck } from './boot';

export type NodeStateDeps = Omit<AdoptionDeps, 'adopted' | 'onAdopted'> & {
  /** The reboot check's (it drops the cooling addresses). */
  pools: PoolStore;
  database: string;
  bootIdPath: string;
};

export interface NodeState {
  adoption: Adoption;
  boot: BootCheck;
  /** What ferryctl doctor adds: a corrupt database kept aside (until an operator removes the copies). */
  violations(): Violation[];
  /** ferry_endpoints_adopted, ferry_adoptions_total, ferry_reboot_releases_total, ferry_database_corrupt_copies. */
  registerMetrics(registry: Registry): void;
}

export function buildNodeState(deps: NodeStateDeps): NodeState {
  const adopted = new AdoptedStore(deps.db);
  const nodeState = new NodeStateStore(deps.db);
  // Made now, counted from the first pass on; registerMetrics puts them in the app's registry.
  const adoptions = new Counter({
    name: 'ferry_adoptions_total',
    help: 'Attachments adopted from the node since ferryd started (a lost, new, corrupt or restored database)',
    registers: [],
  });
  const rebootReleases = new Counter({
    name: 'ferry_reboot_releases_total',
    help: 'Endpoints released at start-up, without grace or cooldown, because the node had booted again',
    registers: [],
  });
  const adoption = new Adoption({ ...deps, adopted, onAdopted: (n) => adoptions.inc(n) });
  const boot = new BootCheck({ ...deps, nodeState, onReleased: (n) => rebootReleases.inc(n) });
  return {
    adoption,
    boot,
    violations: () => databaseRecoveredViolations(deps.database, nodeState),
    registerMetrics(registry) {
      const registers = [registry];
      new Gauge({
        name: 'ferry_endpoints_adopted',
        help: 'Attachments ferryd holds because the node showed them (host veth markers) after its database had lost them',
        registers,
        collect() {
          this.set(adopted.countAdopted());
        },
      });
      registry.registerMetric(adoptions);
      registry.registerMetric(rebootReleases);
      new Gauge({
        name: 'ferry_database_corrupt_copies',
        help: 'Corrupt databases ferryd moved aside (and replaced with a fresh one rebuilt from the node), kept next to the database for the post-mortem',
        registers,
        collect() {
          this.set(keptCopies(deps.database).length);
        },
      });
    },
  };
}

/** Records that `recovered` happened, in the fresh database (doctor reads it back). */
export function recordRecovery(db: Db, recovered: MovedAside): void {
  new NodeStateStore(db).set(
    'database_recovered',
    JSON.stringify({
      reason: recovered.reason,
      movedTo: recovered.movedTo,
      at: new Date(recovered.atMs).toISOString(),
    }),
  );
}

function databaseRecoveredViolations(database: string, nodeState: NodeStateStore): Violation[] {
  const copies = keptCopies(database);
  if (copies.length === 0) return [];
  const last = nodeState.get('database_recovered');
  return [
    {
      kind: 'database-recovered',
      subject: database,
      msg: `${copies.length} corrupt database(s) moved aside (${copies.join(', ')})${last ? `; the latest: ${last}` : ''}; ferryd started fresh and rebuilt its endpoints from the node: remove the copies once looked at (docs/runbook.md, "Corrupt database")`,
    },
  ];
}
