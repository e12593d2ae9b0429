/// <reference types="bun-types" />
/**
 * A delegatable device on the bench node: one end of a veth pair named and addressed like a NIC, its peer
 * in a "wire" namespace of the node's id (so the outer process removes it whatever happens).
 */
import type { BenchNode } from './node';
import { sh } from './proc';

export interface BenchDevice {
  name: string;
  mac: string;
}

/** Puts the device on the node; returns what removes its wire namespace (and so the pair). */
export function addDevice(node: BenchNode, device: BenchDevice): () => void {
  const wire = `ferry-b-wire-${node.dir.split('-').at(-1)}`;
  sh(['ip', 'netns', 'add', wire]);
  sh(['ip', 'link', 'add', device.name, 'address', device.mac, 'type', 'veth', 'peer', 'name', 'w9', 'netns', wire]);
  return () => sh(['ip', 'netns', 'del', wire]);
}

/**
 * Has ferryd look at the node's devices and waits until it lists the device as free. Needed before Ferry
 * asks for the device: at the start, and after another plugin has had it (while that plugin holds it in
 * a pod, ferryd's reconciler may find it missing, and only its next pass sees it back).
 */
export async function deviceFree(node: BenchNode, mac: string): Promise<void> {
  await fetch('http://ferryd/v1/operator/reconcile', { unix: node.socket, method: 'POST' });
  let state = 'unknown';
  for (let i = 0; i < 100; i++) {
    const r = await fetch('http://ferryd/v1/operator/devices', { unix: node.socket });
    const { devices } = (await r.json()) as { devices: { mac: string; state: string }[] };
    state = devices.find((d) => d.mac === mac)?.state ?? 'not listed';
    if (state === 'free') return;
    await Bun.sleep(50);
  }
  throw new Error(`ferryd never listed ${mac} as free (${state})`);
}
