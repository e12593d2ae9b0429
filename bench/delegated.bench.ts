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
import { addDevice, deviceFree } from './lib/device';
import { type BenchNode, BIN, benchNode, dropPods, ferryConf, makePods, REF, runInsideNode } from './lib/node';
import { cniEnv, exec, type Op } from './lib/proc';
import { fmt, median, printTable } from './lib/stats';

const RUNS = Number(process.env.RUNS ?? 100);
const DEVICE = { name: 'eth9', mac: '02:fe:00:00:09:09' };

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

async function inside(node: BenchNode): Promise<void> {
  const removeDevice = addDevice(node, DEVICE);
  await deviceFree(node, DEVICE.mac);
  const pods = makePods(node, RUNS, 'd');
  try {
    const ferry = (delegated: boolean) => (cmd: 'ADD' | 'DEL', pod: string, i: number) =>
      exec(
        [join(BIN, 'ferry-cni')],
        cniEnv(cmd, pod, `dl${delegated ? 1 : 0}x${i}`, 'eth0', BIN),
        ferryConf(node, delegated ? { delegatedNICs: { group: 'bench', count: 1 } } : {}),
      );
    const hostDevice = (cmd: 'ADD' | 'DEL', pod: string, i: number) =>
      exec(
        [join(REF, 'host-device')],
        cniEnv(cmd, pod, `hd${i}`, 'net1', REF),
        JSON.stringify({ cniVersion: '1.0.0', name: 'hd', type: 'host-device', hwaddr: DEVICE.mac }),
      );
    // Warm each once, then measure in turn.
    await pairs(pods.slice(0, 1), ferry(true));
    await pairs(pods.slice(0, 1), hostDevice);
    const infraOnly = await pairs(pods, ferry(false));
    await deviceFree(node, DEVICE.mac);
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
    removeDevice();
  }
}

const node = benchNode();
if (node) await inside(node);
else process.exit(await runInsideNode(import.meta.path, { delegatedDevices: [{ mac: DEVICE.mac, group: 'bench' }] }));
