/**
 * The node is the second source of truth: live pods (an InfraNIC pod, a pod with a delegated NIC, a pod
 * with a secondary network's attachment beside its InfraNIC) survive whatever happens to ferryd's
 * database — removed, its header corrupted, its WAL lost — because ferryd comes back by itself and adopts
 * them from their host veths' markers (the secondary attachment, which has no host veth, from its device's
 * marker in the pod): their addresses are never handed out again, their DELs release them and bring their
 * devices home. And a reboot (the
 * netns gone, a new boot id) releases everything at once, without grace or cooldown.
 */
import { closeSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { netConf, newContainerId } from '../fixtures/conf';
import { type TestDevice, useNodeWithDevices } from '../fixtures/device';
import { ferryctl } from '../fixtures/ferryctl';
import type { Ferryd } from '../fixtures/ferryd';
import { link, linkNames, ping } from '../fixtures/kernel';
import { removeNetns, type TestNetns, useNetns } from '../fixtures/netns';
import { NODE_IPV4 } from '../fixtures/node';
import type { Scope } from '../fixtures/scope';
import { runShim, type ShimCall } from '../fixtures/shim';
import { useTmpDir } from '../fixtures/tmp';
import { logged } from '../fixtures/wait';

const DEVICE: TestDevice = { name: 'eth1', mac: '02:fe:00:00:00:21' };
const DEVICE2: TestDevice = { name: 'eth2', mac: '02:fe:00:00:00:22' };
/** A secondary network (infraNIC: false): the attachment is the device, addressed from this pool. */
const SRIOV = { name: 'sriov', infraNIC: false, ipv4: { subnet: '192.168.50.0/24' } };
// Nothing but start-up may repair anything here: the reconciler is an hour away.
const AN_HOUR = { reconcile: { intervalSec: 3600, staleGraceSec: 3600 } };

interface Endpoint {
  containerId: string;
  interfaces: {
    ifName: string;
    nicType: string;
    generation: number;
    adoptedAt?: string;
    addresses: { address: string }[];
    hostIfName?: string;
  }[];
}

async function endpoints(ferryd: Ferryd): Promise<Endpoint[]> {
  const r = await ferryd.request('GET', '/v1/operator/endpoints');
  expect(r.status, r.body).toBe(200);
  return (r.json as { endpoints: Endpoint[] }).endpoints;
}

async function useLiveNode(t: Scope) {
  // The kernel's boot id, as a file the test can change (a reboot).
  const bootIdFile = join(useTmpDir(t, 'boot'), 'boot_id');
  writeFileSync(bootIdFile, 'boot-1\n');
  const { node, ferryd } = await useNodeWithDevices(t, [DEVICE, DEVICE2], {
    ...AN_HOUR,
    bootIdPath: bootIdFile,
    logLevel: 'info',
    networks: [{ name: 'ferry', ipv4: { subnet: '10.244.1.0/24' }, ipv6: { subnet: 'fd00:10:244:1::/64' } }, SRIOV],
  });
  const addPod = async (extra: Record<string, unknown> = {}) => {
    const pod = await useNetns(t, 'pod');
    const call: ShimCall = {
      containerId: newContainerId(),
      ifName: 'eth0',
      netns: pod,
      conf: netConf(ferryd, { deleteQueue: ferryd.deleteQueue, ...extra }),
    };
    const add = await runShim(node, 'ADD', call);
    expect(add.exitCode, add.stdout).toBe(0);
    const ips = (add.json as { ips: { address: string }[] }).ips.map((i) => i.address);
    return { pod, call, ips };
  };
  /** A pod with its InfraNIC, then a secondary network's attachment net1 (as Multus adds a delegate). */
  const addSecondaryPod = async () => {
    const primary = await addPod();
    const call: ShimCall = {
      ...primary.call,
      ifName: 'net1',
      conf: netConf(ferryd, {
        name: SRIOV.name,
        infraNIC: false,
        deleteQueue: ferryd.deleteQueue,
        delegatedNICs: { group: 'frontend', count: 1 },
      }),
    };
    const add = await runShim(node, 'ADD', call);
    expect(add.exitCode, add.stdout).toBe(0);
    const ips = (add.json as { ips: { address: string }[] }).ips.map((i) => i.address);
    return { primary, secondary: { pod: primary.pod, call, ips } };
  };
  return { node, ferryd, addPod, addSecondaryPod, bootIdFile };
}

type Pod = Awaited<ReturnType<Awaited<ReturnType<typeof useLiveNode>>['addPod']>>;

/** What can happen to the database while ferryd is away, and how each is done. */
const LOSSES: Record<string, (ferryd: Ferryd) => Promise<void>> = {
  async 'database removed'(ferryd) {
    await ferryd.kill();
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${ferryd.database}${suffix}`, { force: true });
  },
  async 'database header corrupted'(ferryd) {
    // A clean stop checkpoints the WAL into the file: the garbage then hides everything.
    await ferryd.stop();
    const fd = openSync(ferryd.database, 'r+');
    writeSync(fd, Buffer.alloc(100, 0x5a), 0, 100, 0);
    closeSync(fd);
  },
  async 'WAL lost'(ferryd) {
    // Every commit since the first start's checkpoint is in the WAL (checkpoints come every ~10 MiB).
    await ferryd.kill();
    rmSync(`${ferryd.database}-wal`, { force: true });
  },
};

describe.for(Object.keys(LOSSES))('%s while pods live', (loss) => {
  test('ferryd comes up by itself, adopts every live pod; no live address is handed out; DELs release them', async (t) => {
    const { node, ferryd, addPod, addSecondaryPod } = await useLiveNode(t);
    // Written once and checkpointed (a clean stop), so the WAL-lost database still knows the network.
    await ferryd.stop();
    await ferryd.start();
    const infra = await addPod();
    const delegated = await addPod({ delegatedNICs: { group: 'frontend', count: 1 } });
    const { primary, secondary } = await addSecondaryPod();
    const live = [...infra.ips, ...delegated.ips, ...primary.ips, ...secondary.ips].map((a) => a.split('/')[0]).sort();
    const before = await endpoints(ferryd);

    await LOSSES[loss]?.(ferryd);
    await ferryd.start();

    // Every live pod is known again, marked adopted, under the generation it was added with.
    const after = await endpoints(ferryd);
    const ifaceOf = (eps: Endpoint[], p: Pod) =>
      eps.find((e) => e.containerId === p.call.containerId)?.interfaces.find((i) => i.ifName === p.call.ifName);
    for (const p of [infra, delegated, primary, secondary]) {
      const iface = ifaceOf(after, p);
      expect(iface?.adoptedAt, `${p.call.containerId}/${p.call.ifName} adopted`).toBeDefined();
      expect(iface?.generation).toBe(ifaceOf(before, p)?.generation);
      expect(iface?.addresses.map((a) => a.address)).toEqual(p.ips);
    }
    // The secondary network's attachment is its device again (no host veth ever named it).
    expect(ifaceOf(after, secondary)).toMatchObject({ nicType: 'DelegatedNIC', hostIfName: DEVICE2.name });
    expect(after.find((e) => e.containerId === delegated.call.containerId)?.interfaces.map((i) => i.ifName)).toEqual([
      'eth0',
      'net1',
    ]);
    expect(await ferryd.assignedAddresses()).toEqual(live);
    // What an operator reads: every interface of both pods marked adopted.
    const listed = await ferryctl(ferryd, 'endpoints');
    expect(listed.stdout.split('\n').filter((l) => l.includes('committed, adopted'))).toHaveLength(5);
    const devices = (await ferryd.request('GET', '/v1/operator/devices')).json as {
      devices: { mac: string; state: string; assignedTo?: { containerId: string } }[];
    };
    expect(devices.devices.map((d) => [d.state, d.assignedTo?.containerId]).sort()).toEqual(
      [
        ['assigned', delegated.call.containerId],
        ['assigned', secondary.call.containerId],
      ].sort(),
    );
    // The pods kept working all along (ferryd is not in the data path).
    expect(await ping(infra.pod, NODE_IPV4)).toBe(true);

    // A new pod never gets a live address, and a generation above every one the node showed.
    const fresh = await addPod();
    expect(live).not.toContain(fresh.ips[0]?.split('/')[0]);
    const gens = after.flatMap((e) => e.interfaces.map((i) => i.generation));
    const freshGen = (await endpoints(ferryd)).find((e) => e.containerId === fresh.call.containerId)?.interfaces[0]
      ?.generation;
    expect(freshGen).toBeGreaterThan(Math.max(...gens));

    // Each adopted pod's DEL releases its addresses and brings its device home (the secondary network's
    // first, as Multus deletes its delegates before the default network).
    for (const p of [infra, delegated, secondary, primary, fresh]) {
      for (const n of [1, 2]) expect((await runShim(node, 'DEL', p.call)).exitCode, `DEL #${n}`).toBe(0);
    }
    expect(await ferryd.assignedAddresses()).toEqual([]);
    expect(await linkNames(delegated.pod)).toEqual(['lo']);
    expect(await linkNames(secondary.pod)).toEqual(['lo']);
    expect((await link(node, DEVICE.name))?.address).toBe(DEVICE.mac);
    expect((await link(node, DEVICE2.name))?.address).toBe(DEVICE2.mac);
    expect(await linkNames(node)).toEqual(['eth1', 'eth2', 'lo']);

    if (loss === 'database header corrupted') await expectRecoveredLoudly(ferryd);
  });
});

/** The corrupt file was moved aside, and ferryd says so: its log, the metric, doctor. */
async function expectRecoveredLoudly(ferryd: Ferryd): Promise<void> {
  const errorLine = ferryd
    .log()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { level: number; msg: string; movedTo?: string })
    .find((l) => l.msg.startsWith('database corrupt: moved aside'));
  expect(errorLine?.level).toBe(50);
  expect(readFileSync(errorLine?.movedTo ?? '').subarray(0, 100)).toEqual(Buffer.alloc(100, 0x5a));
  const metrics = (await ferryd.request('GET', '/metrics')).body;
  expect(metrics).toMatch(/^ferry_database_corrupt_copies 1$/m);
  expect(metrics).toMatch(/^ferry_adoptions_total 4$/m);
  const doctor = (await ferryd.request('GET', '/v1/operator/invariants')).json as {
    violations: { kind: string; msg: string }[];
  };
  expect(doctor.violations.map((v) => v.kind)).toEqual(['database-recovered']);
  expect(doctor.violations[0]?.msg).toContain(errorLine?.movedTo);
}

test('a reboot (every netns gone, a new boot id) releases everything at once; a restart alone does not', async (t) => {
  const { ferryd, addPod, bootIdFile } = await useLiveNode(t);
  const pods: Pod[] = [];
  for (let i = 0; i < 3; i++) pods.push(await addPod());
  pods.push(await addPod({ delegatedNICs: { group: 'frontend', count: 1 } }));
  await ferryd.stop();
  // What a reboot leaves: no pod netns (their veths and the delegated device's stand-in died with them).
  for (const p of pods) await removeNetns((p.pod as TestNetns).name);

  // The same boot: the netns are gone but the grace period (an hour here) holds them.
  await ferryd.start();
  expect(await ferryd.assignedAddresses()).toHaveLength(8);
  await ferryd.stop();

  writeFileSync(bootIdFile, 'boot-2\n');
  await ferryd.start();
  expect(await ferryd.assignedAddresses()).toEqual([]);
  // No cooldown either: every address is Available again.
  const pools = (await ferryd.request('GET', '/v1/operator/pools')).json as {
    pools: { assigned: number; pendingRelease: number }[];
  };
  expect(pools.pools.map((p) => [p.assigned, p.pendingRelease])).toEqual([
    [0, 0],
    [0, 0],
    [0, 0],
  ]);
  expect(await endpoints(ferryd)).toEqual([]);
  await logged(ferryd, 'new boot: endpoints whose netns is gone released');
  expect((await ferryd.request('GET', '/metrics')).body).toMatch(/^ferry_reboot_releases_total 4$/m);
  // The new boot's pods start at once.
  await addPod();
});
