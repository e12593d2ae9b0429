/// <reference types="bun-types" />
/**
 * A pod's delegated NIC asked for by its `ferry.dev/nics` annotation against the same NIC asked for by the
 * conflist's `delegatedNICs`, same run, same ferryd, same device, alternating ADD/DEL pair by pair (the
 * order rotating); an InfraNIC-only pod is the third mode. ferryd watches the node's pods in the stand-in
 * API server (test/fixtures/kube-api-server.mjs) and every pod is there, as on a cluster (each ADD's pod
 * is looked up in ferryd's cache), so the modes differ only in where the intent comes from and what is
 * built.
 * Prints p50 and p90 of each, and the spread of the per-round p50s; asserts nothing about time.
 *
 *   sudo pnpm --filter @ferry/bench bench:pod-nics     (RUNS=40 pairs per mode and round, ROUNDS=3)
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { addDevice, deviceFree } from './lib/device';
import { type BenchNode, BIN, benchNode, dropPods, ferryConf, makePods, runInsideNode } from './lib/node';
import { cniEnv, exec } from './lib/proc';
import { fmt, median, percentile, printTable } from './lib/stats';

// Before the fixtures load: their names go by this prefix.
process.env.FERRY_TEST_PREFIX = 'ferry-b-pods-';
const { kubeconfigFor, podObject, useKubeApi } = await import('../test/fixtures/kube-api');
const { podCniArgs } = await import('../test/fixtures/network-status');
const { manualScope } = await import('../test/fixtures/scope');

const RUNS = Number(process.env.RUNS ?? 40);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const DEVICE = { name: 'eth9', mac: '02:fe:00:00:09:09' };
const GROUP = 'bench';
const NAMESPACE = 'bench';
const NODE_NAME = 'bench-node';
/** The stand-in API server's port in the node namespace: ferryd's kubeconfig is written before it starts. */
const KUBE_PORT = 16443;

const MODES = [
  { name: 'intent: ferry.dev/nics [{group}]', conf: {}, nics: [{ group: GROUP }] },
  { name: 'conflist: delegatedNICs {group, count: 1}', conf: { delegatedNICs: { group: GROUP, count: 1 } } },
  { name: 'InfraNIC only (no intent, no delegatedNICs)', conf: {} },
] as const;

async function untilCached(node: BenchNode, n: number): Promise<void> {
  for (let i = 0; i < 400; i++) {
    const r = await fetch('http://ferryd/v1/operator/pods', { unix: node.socket });
    if (r.status === 200 && ((await r.json()) as { pods: unknown[] }).pods.length >= n) return;
    await Bun.sleep(50);
  }
  throw new Error(`ferryd's cache never held the ${n} pods`);
}

async function inside(node: BenchNode): Promise<void> {
  const scope = manualScope();
  const removeDevice = addDevice(node, DEVICE);
  const pods = makePods(node, RUNS, 'k');
  try {
    const api = await useKubeApi(scope, { port: KUBE_PORT });
    await deviceFree(node, DEVICE.mac);
    // Every pod of every round and mode, in the API before the first ADD (the watch delivers them).
    const uid = new Map<string, string>();
    const podName = (m: number, r: number, i: number) => `m${m}-r${r}-${i}`;
    for (let r = 0; r <= ROUNDS; r++)
      for (const [m, mode] of MODES.entries())
        for (let i = 0; i < RUNS; i++) {
          const name = podName(m, r, i);
          const annotations: Record<string, string> =
            'nics' in mode ? { 'ferry.dev/nics': JSON.stringify(mode.nics) } : {};
          uid.set(name, (await api.putPod(podObject(NAMESPACE, name, NODE_NAME, annotations))).uid);
        }
    await untilCached(node, uid.size);

    const run = async (cmd: 'ADD' | 'DEL', m: number, r: number, i: number) => {
      const name = podName(m, r, i);
      const args = podCniArgs(NAMESPACE, name, uid.get(name) ?? '');
      const env = cniEnv(cmd, pods[i] ?? '', `pn${name}`, 'eth0', BIN, args);
      const op = await exec([join(BIN, 'ferry-cni')], env, ferryConf(node, MODES[m]?.conf));
      if (op.exitCode !== 0) throw new Error(`${cmd} ${name}: ${op.stdout}`);
      return op.wallMs;
    };
    // Round 0 warms every mode; rounds 1… are measured, the modes alternating pair by pair.
    const add = MODES.map(() => [] as number[][]);
    const del = MODES.map(() => [] as number[][]);
    for (let r = 0; r <= ROUNDS; r++) {
      for (const [m] of MODES.entries()) {
        add[m]?.push([]);
        del[m]?.push([]);
      }
      for (let i = 0; i < RUNS; i++) {
        // The order rotates pair by pair: no mode always follows the same one (the device just home, or not).
        for (let k = 0; k < MODES.length; k++) {
          const m = (i + k) % MODES.length;
          const a = await run('ADD', m, r, i);
          const d = await run('DEL', m, r, i);
          // Untimed: a device-inventory scan while the device was in the pod marks it absent until the next
          // scan, which release only schedules (a loaded machine's next ADD can come first: 106, 0 free).
          await deviceFree(node, DEVICE.mac);
          if (r === 0) continue;
          add[m]?.[r]?.push(a);
          del[m]?.[r]?.push(d);
        }
      }
    }
    const row = (label: string, rounds: number[][]) => {
      const all = rounds.slice(1).flat();
      const p50s = rounds.slice(1).map(median);
      return [label, fmt(median(all)), fmt(percentile(all, 90)), `${fmt(Math.min(...p50s))}–${fmt(Math.max(...p50s))}`];
    };
    const intentAdd = median((add[0] ?? []).slice(1).flat());
    const conflistAdd = median((add[1] ?? []).slice(1).flat());
    printTable(
      `a delegated NIC from the pod's annotation vs from the conflist (${ROUNDS} rounds × ${RUNS} ADD/DEL pairs per mode, alternating; ms)`,
      ['measure', 'p50', 'p90', 'per-round p50s'],
      [
        ...MODES.map((mode, m) => row(`ADD, ${mode.name}`, add[m] ?? [])),
        ...MODES.map((mode, m) => row(`DEL, ${mode.name}`, del[m] ?? [])),
        ['ADD p50 intent / conflist', fmt(intentAdd / conflistAdd, 3), '', ''],
      ],
    );
  } finally {
    await scope.runCleanups();
    dropPods(pods);
    removeDevice();
  }
}

const node = benchNode();
if (node) await inside(node);
else {
  const dir = `/tmp/ferry-b-pods-${process.pid}`;
  mkdirSync(dir, { recursive: true });
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(kubeconfig, kubeconfigFor(`http://127.0.0.1:${KUBE_PORT}`));
  try {
    process.exitCode = await runInsideNode(import.meta.path, {
      delegatedDevices: [{ mac: DEVICE.mac, group: GROUP }],
      tenancy: { deviceGroups: [{ group: GROUP, namespaces: [NAMESPACE] }], staticAddresses: [] },
      cluster: { nodeName: NODE_NAME, routing: 'none', kubernetes: { kubeconfig, pods: {} } },
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
