/// <reference types="bun-types" />
/**
 * A delegated NIC against the reference host-device plugin, same run, same way (fork+exec of the
 * plugin in the node namespace). Ferry's ADD always builds the pod's InfraNIC too, so it is measured
 * twice — InfraNIC only, and InfraNIC + one delegated NIC — and the difference is the delegated NIC's
 * own cost, next to host-device moving one device.
 *
 *   sudo pnpm --filter @ferry/bench bench:delegated     (RUNS=100 by default)
 */
import { join } from 'node:path';
import { type BenchNode, BIN, benchNode, dropPods, makePods, REF, runInsideNode } from './lib/node';
import { exec, type Op, sh } from './lib/proc';
import { fmt, median, printTable } from './lib/stats';

const RUNS = Number(process.env.RUNS ?? 100);
const DEVICE = { name: 'eth9', mac: '02:fe:00:00:09:09' };

function env(cmd: string, netns: string, id: string, ifName: string, cniPath: string) {
  return {
    PATH: '/usr/sbin:/usr/bin:/sbin:/bin',
    CNI_COMMAND: cmd,
    CNI_CONTAINERID: id,
    CNI_NETNS: netns,
    CNI_IFNAME: ifName,
    CNI_PATH: cniPath,
  };
}

async function pairs(pods: string[], run: (cmd: 'ADD' | 'DEL', pod: string, i: number) => Promise<Op>) {
  const add: number[] = [];
  const del: number[] = [];
  for (const [i, pod] of pods.entries()) {
    const a = await run('ADD', pod, i);
    if (a.exitCode !== 0) throw new Error(`ADD: ${a.stdout}`);
    add.push(a.wallMs);
    const d = await run('DEL', pod, i);
    if (d.exitCode !== 0) throw new Error(`DEL: ${d.stdout}`);
    del.push(d.wallMs);
  }
  return { add: median(add), del: median(del) };
}

/**
 * Has ferryd look at the node's devices and waits until it lists the device as free. Needed before Ferry
 * asks for the device: at the start, and after host-device has had it (while host-device holds it in a pod,
 * ferryd's reconciler may find it missing, and only its next pass sees it back).
 */
async function deviceFree(node: BenchNode): Promise<void> {
  await fetch('http://ferryd/v1/operator/reconcile', { unix: node.socket, method: 'POST' });
  let state = 'unknown';
  for (let i = 0; i < 100; i++) {
    const r = await fetch('http://ferryd/v1/operator/devices', { unix: node.socket });
    const { devices } = (await r.json()) as { devices: { mac: string; state: string }[] };
    state = devices.find((d) => d.mac === DEVICE.mac)?.state ?? 'not listed';
    if (state === 'free') return;
    await Bun.sleep(50);
  }
  throw new Error(`ferryd never listed ${DEVICE.mac} as free (${state})`);
}

async function inside(node: BenchNode): Promise<void> {
  const wire = `ferry-b-wire-${node.dir.split('-').at(-1)}`;
  sh(['ip', 'netns', 'add', wire]);
  sh(['ip', 'link', 'add', DEVICE.name, 'address', DEVICE.mac, 'type', 'veth', 'peer', 'name', 'w9', 'netns', wire]);
  await deviceFree(node);
  const pods = makePods(node, RUNS, 'd');
  try {
    const ferryConf = (delegated: boolean) =>
      JSON.stringify({
        cniVersion: '1.0.0',
        name: 'ferry',
        type: 'ferry-cni',
        daemonSocket: node.socket,
        logFile: join(node.dir, 'cni.log'),
        ...(delegated ? { delegatedNICs: { group: 'bench', count: 1 } } : {}),
      });
    const ferry = (delegated: boolean) => (cmd: 'ADD' | 'DEL', pod: string, i: number) =>
      exec([join(BIN, 'ferry-cni')], env(cmd, pod, `dl${delegated ? 1 : 0}x${i}`, 'eth0', BIN), ferryConf(delegated));
    const hostDevice = (cmd: 'ADD' | 'DEL', pod: string, i: number) =>
      exec(
        [join(REF, 'host-device')],
        env(cmd, pod, `hd${i}`, 'net1', REF),
        JSON.stringify({ cniVersion: '1.0.0', name: 'hd', type: 'host-device', hwaddr: DEVICE.mac }),
      );
    // Warm each once, then measure in turn.
    await pairs(pods.slice(0, 1), ferry(true));
    await pairs(pods.slice(0, 1), hostDevice);
    const infraOnly = await pairs(pods, ferry(false));
    await deviceFree(node);
    const withDevice = await pairs(pods, ferry(true));
    const reference = await pairs(pods, hostDevice);
    const addInc = withDevice.add - infraOnly.add;
    const delInc = withDevice.del - infraOnly.del;
    printTable(
      `delegated NIC vs host-device (${RUNS} ADD/DEL pairs, medians, ms)`,
      ['measure', 'ferry', 'host-device', 'ratio'],
      [
        ['ADD: delegated NIC alone (with − without)', fmt(addInc), fmt(reference.add), fmt(addInc / reference.add, 2)],
        ['DEL: delegated NIC alone (with − without)', fmt(delInc), fmt(reference.del), fmt(delInc / reference.del, 2)],
        [
          'ADD: whole, InfraNIC + delegated NIC',
          fmt(withDevice.add),
          fmt(reference.add),
          fmt(withDevice.add / reference.add, 2),
        ],
        [
          'DEL: whole, InfraNIC + delegated NIC',
          fmt(withDevice.del),
          fmt(reference.del),
          fmt(withDevice.del / reference.del, 2),
        ],
        ['ADD: InfraNIC only', fmt(infraOnly.add), '-', '-'],
        ['DEL: InfraNIC only', fmt(infraOnly.del), '-', '-'],
      ],
    );
  } finally {
    dropPods(pods);
    sh(['ip', 'netns', 'del', wire]);
  }
}

const node = benchNode();
if (node) await inside(node);
else process.exit(await runInsideNode(import.meta.path, { delegatedDevices: [{ mac: DEVICE.mac, group: 'bench' }] }));
