/**
 * The nodes the device-choice tests (attachments/nic-choice.test.ts and its pieces' tests) allocate on:
 * Attachments.allocate on a real SQLite file and a sysfs tree of the test's own, with tenants, a
 * secondary network and (useServedNode) a group served to the kubelet; and what their assertions read.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Code } from '@ferry/shared-types/errors';
import { type PodNics, parsePodNics } from '@ferry/shared-types/kube/pod-nics';
import { expect, type TestContext } from 'vitest';
import { PodNicRefusal } from '../attachments/pod-nic-refusal';
import type { KubeletAllocation } from '../device-plugin/served';
import { addDevice, failure, stateOf, useAttachments, type World } from './attachments-world';
import { tempDir } from './harness';

export const FE1 = '02:00:00:00:fe:01';
export const FE2 = '02:00:00:00:fe:02';
export const BE1 = '02:00:00:00:be:01';
export const VF1 = '02:00:00:00:0f:01';
export const PCI_VF1 = '0000:18:02.1';
export const TEAM_A = { namespace: 'team-a', name: 'web-5d8f7c9b4-x2kqp' };
export const TEAM_B = { namespace: 'team-b', name: 'api-7c9b45d8f-q2xkp' };

/**
 * A node with groups frontend (team-a's), backend (team-b's) and sriov (team-a's, by PCI address), a
 * secondary network "sriov" with a pool and one without, and static ranges for team-a.
 */
export function useTenantNode(t: TestContext): World {
  const sysfs = tempDir(t);
  // The VF's netdev as sysfs shows it: bus/pci/devices/<addr>/net/<ifname>.
  mkdirSync(join(sysfs, 'bus', 'pci', 'devices', PCI_VF1, 'net', 'ens2f0v1'), { recursive: true });
  const w = useAttachments(t, {
    sysfsRoot: sysfs,
    networks: [
      { name: 'ferry', ipv4: { subnet: '10.244.1.0/24' } },
      {
        name: 'sriov',
        infraNIC: false,
        ipv4: { subnet: '192.168.50.0/24', gateway: '192.168.50.1', routes: [{ dst: '192.168.0.0/16' }] },
      },
      { name: 'raw', infraNIC: false },
    ],
    delegatedDevices: [
      { mac: FE1, group: 'frontend' },
      { mac: FE2, group: 'frontend' },
      { mac: BE1, group: 'backend' },
      { mac: VF1, group: 'sriov' },
    ],
    tenancy: {
      deviceGroups: [
        { group: 'frontend', namespaces: ['team-a'] },
        { group: 'backend', namespaces: ['team-b'] },
        { group: 'sriov', namespaces: ['team-a'] },
      ],
      staticAddresses: [
        { namespaces: ['team-a'], ranges: ['198.51.100.0/28', '2001:db8:a::/64'] },
        { namespaces: ['team-b'], ranges: ['198.51.100.16/28'] },
      ],
    },
  });
  addDevice(w, FE1, 'frontend', 'ens1f0');
  addDevice(w, FE2, 'frontend', 'ens1f1');
  addDevice(w, BE1, 'backend', 'ens3f0');
  addDevice(w, VF1, 'sriov', 'ens2f0v1');
  return w;
}

export const nics = (json: unknown): PodNics => {
  const r = parsePodNics(JSON.stringify(json));
  if ('problem' in r) throw new Error(r.problem);
  return r.nics;
};

/** A refusal's code, reason and message. */
export function refusal(fn: () => unknown): { code: number; reason?: string; msg: string } {
  try {
    fn();
  } catch (err) {
    if (err instanceof PodNicRefusal) return { code: err.code, reason: err.reason, msg: err.message };
    throw err;
  }
  throw new Error('expected a refusal, nothing was thrown');
}

export function expectNothingStored(w: World, containerId: string): void {
  expect(failure(() => w.attachments.get(containerId)).code).toBe(Code.EndpointNotFound);
  for (const mac of [FE1, FE2, BE1, VF1]) expect(stateOf(w, mac), mac).toBe('free');
}

// Groups served to the kubelet: a pod gets exactly the devices the kubelet allocated to it, placed, named
// and addressed by its annotation; none from the free pool, a conflist's count or a reservation.

export const FE3 = '02:00:00:00:fe:03';
export const POD = TEAM_A;
export const OTHER = { namespace: 'team-a', name: 'web-5d8f7c9b4-q7zzl' };
export const FRONTEND = { group: 'frontend', count: 1 };

/** frontend (three devices) served to the kubelet; backend (one) not; a secondary network; static ranges for team-a. */
export function useServedNode(t: TestContext, tenancy: Record<string, unknown> = {}): World {
  const w = useAttachments(t, {
    networks: [
      { name: 'ferry', ipv4: { subnet: '10.244.1.0/24' } },
      { name: 'raw', infraNIC: false },
    ],
    delegatedDevices: [
      { mac: FE1, group: 'frontend' },
      { mac: FE2, group: 'frontend' },
      { mac: FE3, group: 'frontend' },
      { mac: BE1, group: 'backend' },
    ],
    devicePlugin: { groups: ['frontend'] },
    tenancy: {
      deviceGroups: [],
      staticAddresses: [{ namespaces: ['team-a'], ranges: ['198.51.100.0/28'] }],
      ...tenancy,
    },
  });
  addDevice(w, FE1, 'frontend', 'ens1f0');
  addDevice(w, FE2, 'frontend', 'ens1f1');
  addDevice(w, FE3, 'frontend', 'ens1f2');
  addDevice(w, BE1, 'backend', 'ens3f0');
  return w;
}

export const kubelet = (byGroup: Record<string, readonly string[]>): KubeletAllocation =>
  new Map(Object.entries(byGroup));
export const states = (w: World) => [FE1, FE2, FE3, BE1].map((m) => stateOf(w, m));
