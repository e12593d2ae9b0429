/// <reference types="bun-types" />
/**
 * Cluster routing at scale: the real ClusterController and the real kernel (a namespace of its own),
 * fed by a scripted PeerSource. PEERS peer nodes (5,000 by default), dual-stack: synced from a cold
 * start, re-synced after a restart (the kernel holds everything already), then one node's change at
 * a time (a new InternalIP; a node leaving and coming back). Wall time and CPU of the sync, CPU counted
 * for this process and the iproute2 processes it waited for. Goal: cold ≤ 2 s, one change ≤ 50 ms.
 *
 *   pnpm --filter @ferry/bench bench:cluster        (PEERS=5000, CHANGES=30)
 */
import { readFileSync } from 'node:fs';
import pino from 'pino';
import { ClusterController } from '../packages/cns-daemon/src/cluster/controller';
import type { Peer, PeerSource, PeersListener } from '../packages/cns-daemon/src/cluster/peers';
import { Ip, Iproute2, netnsAt } from '../packages/net/src/index';
import { nodeRunner } from '../packages/net/src/node-runner';
import type { ClusterConfig } from '../packages/shared-types/src/config/ferryd';
import { sh } from './lib/proc';
import { fmt, median, percentile, printTable } from './lib/stats';

const PEERS = Number(process.env.PEERS ?? 5000);
const CHANGES = Number(process.env.CHANGES ?? 30);

/** A source the bench drives by hand: every emit is one new view. */
class ScriptedSource implements PeerSource {
  #listener: PeersListener | undefined;
  start(listener: PeersListener): void {
    this.#listener = listener;
  }
  async stop(): Promise<void> {}
  emit(peers: readonly Peer[]): void {
    this.#listener?.(peers);
  }
  status() {
    return { kind: 'static' as const, lastSync: null, watchRestarts: 0, lastError: null };
  }
}

/** CPU of this process plus its waited-for children (iproute2), in ms. /proc ticks are 10 ms. */
function cpuMs(): number {
  const own = process.cpuUsage();
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]?.split(' ') ?? [];
  const children = (Number(fields[13]) + Number(fields[14])) * 10;
  return (own.user + own.system) / 1000 + children;
}

function peer(i: number, addressBump = 0): Peer {
  const hi = (i >> 8) & 0xff;
  const lo = i & 0xff;
  return {
    name: `node-${i}`,
    addresses: [
      `10.0.${hi}.${lo + 2 + addressBump > 255 ? lo : lo + 2 + addressBump}`,
      `fd00:ee::${(i + 2).toString(16)}`,
    ],
    podCIDRs: [`10.${128 + hi}.${lo}.0/24`, `fd00:10:${(i + 1).toString(16)}::/64`],
  };
}

async function measure(c: ClusterController, source: ScriptedSource, peers: readonly Peer[]) {
  const cpu0 = cpuMs();
  const t0 = performance.now();
  source.emit(peers);
  await c.idle();
  return { ms: performance.now() - t0, cpu: cpuMs() - cpu0, changes: c.stats.lastChanges };
}

async function run(routing: 'host-gw' | 'vxlan'): Promise<string[][]> {
  const name = `ferry-b-cluster-${Math.random().toString(16).slice(2, 10)}`;
  sh(['ip', 'netns', 'add', name]);
  const ns = netnsAt(`/var/run/netns/${name}`);
  const inNs = (...args: string[]) => sh(['ip', '-n', name, ...args]);
  try {
    inNs('link', 'set', 'lo', 'up');
    inNs('link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'eth1');
    inNs('link', 'set', 'eth0', 'up');
    inNs('link', 'set', 'eth1', 'up');
    inNs('addr', 'add', '10.0.0.1/16', 'dev', 'eth0');
    inNs('addr', 'add', 'fd00:ee::1/64', 'dev', 'eth0', 'nodad');
    const config: ClusterConfig = {
      nodeName: 'node-self',
      routing,
      clusterCIDRs: [],
      masquerade: false,
      peers: [],
      vxlan: { vni: 1, port: 8472, device: 'ferry.1' },
      resyncSec: 3600,
      reclaimSec: 30,
      nodeAddresses: ['10.0.0.1'],
    };
    const peers = Array.from({ length: PEERS }, (_, i) => peer(i));
    const build = (source: ScriptedSource) =>
      new ClusterController({
        config,
        ownPodCIDRs: ['10.127.0.0/24', 'fd00:10::/64'],
        source,
        ip: new Ip(new Iproute2(nodeRunner)),
        ns,
        log: pino({ level: 'warn' }),
        now: Date.now,
      });
    const rows: string[][] = [];
    let source = new ScriptedSource();
    let c = build(source);
    c.start();
    const cold = await measure(c, source, peers);
    rows.push([`${routing}: cold start, ${PEERS} peers`, String(cold.changes), fmt(cold.ms), fmt(cold.cpu)]);
    await c.stop();

    source = new ScriptedSource();
    c = build(source);
    c.start();
    const warm = await measure(c, source, peers);
    rows.push([
      `${routing}: restart (kernel read, nothing to change)`,
      String(warm.changes),
      fmt(warm.ms),
      fmt(warm.cpu),
    ]);

    const changes = { moved: 0, churn: 0 };
    const moved: number[] = [];
    const movedCpu: number[] = [];
    const churn: number[] = [];
    const churnCpu: number[] = [];
    let current = peers;
    for (let k = 0; k < CHANGES; k++) {
      const i = (k * 977) % PEERS;
      current = current.map((p, j) => (j === i ? peer(i, 1 + (k % 2)) : p));
      const m = await measure(c, source, current);
      moved.push(m.ms);
      changes.moved = m.changes;
      movedCpu.push(m.cpu);
      const without = current.filter((_, j) => j !== i);
      const gone = await measure(c, source, without);
      const back = await measure(c, source, current);
      churn.push(gone.ms, back.ms);
      changes.churn = gone.changes;
      churnCpu.push(gone.cpu, back.cpu);
    }
    rows.push([
      `${routing}: one node's new InternalIP (median / p95)`,
      String(changes.moved),
      `${fmt(median(moved))} / ${fmt(percentile(moved, 95))}`,
      fmt(median(movedCpu)),
    ]);
    rows.push([
      `${routing}: one node leaves or joins (median / p95)`,
      String(changes.churn),
      `${fmt(median(churn))} / ${fmt(percentile(churn, 95))}`,
      fmt(median(churnCpu)),
    ]);
    await c.stop();
    return rows;
  } finally {
    sh(['ip', 'netns', 'del', name]);
  }
}

const rows = [...(await run('host-gw')), ...(await run('vxlan'))];
printTable(
  `cluster route sync, ${PEERS} dual-stack peers (${CHANGES} changes each; ms; CPU includes iproute2)`,
  ['measure', 'kernel changes', 'wall ms', 'CPU ms'],
  rows,
);
