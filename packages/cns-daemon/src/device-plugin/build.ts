/**
 * ferryd's device plugin, built when `devicePlugin` is set: one ResourcePlugin per served group, the
 * kubelet's pod-resources client an ADD asks (through allocationOf), and their metrics. Loaded by
 * daemon.ts only when configured: it brings @grpc/grpc-js and the protos.
 *
 * The device lists follow ferryd's inventory: every scan (each reconcile pass, and the pass after a
 * release) calls refresh(), and each plugin sends its list to the kubelet when it changed.
 */
import { join } from 'node:path';
import type { PodRef } from '@ferry/shared-types/api/common';
import type { Device } from '@ferry/shared-types/api/devices';
import type { DevicePluginConfig } from '@ferry/shared-types/config/ferryd';
import type { Logger } from 'pino';
import { Counter, Gauge, type Registry } from 'prom-client';
import { groupDevicesOf, type PciFunctionOf } from './devices';
import { PodResourcesClient } from './pod-resources';
import { ResourcePlugin, type ResourceStatus } from './resource';
import type { KubeletAllocation, ReleasedDevice } from './served';

/** How often each plugin checks that the kubelet still knows it. */
const CHECK_MS = 1000;

export interface DevicePluginOptions {
  config: DevicePluginConfig;
  served: ReadonlySet<string>;
  /** The inventory's devices now. */
  devices(): Device[];
  /** sysfs now (a device's NUMA node and PF). */
  pciFunctionOf: PciFunctionOf;
  now: () => number;
  log: Logger;
  registry: Registry;
  checkMs?: number;
}

export interface DevicePlugin {
  /**
   * What the kubelet allocated to the pod an ADD is for; undefined for an ADD without a pod (no
   * K8S_POD_* args: it gets none of the served groups). CniError TryAgainLater when the kubelet does not answer.
   */
  allocationOf(pod: PodRef | undefined): Promise<KubeletAllocation | undefined>;
  /** After an inventory scan: sends changed device lists to the kubelet. */
  refresh(): void;
  /** Attachments released these devices (each held since `heldSinceMs`): their device-info files go. */
  released(devices: readonly ReleasedDevice[]): void;
  status(): ResourceStatus[];
  start(): void;
  stop(): Promise<void>;
}

export function buildDevicePlugin(opts: DevicePluginOptions): DevicePlugin {
  const log = opts.log.child({ component: 'device-plugin' });
  const dir = join(opts.config.kubeletDir, 'device-plugins');
  const registrations = new Counter({
    name: 'ferry_device_plugin_registrations_total',
    help: 'Registrations with the kubelet (deviceplugin/v1beta1), by resource and result: registered, failed (tried again each second)',
    labelNames: ['resource', 'result'],
    registers: [opts.registry],
  });
  const plugins = [...opts.served].sort().map(
    (group) =>
      new ResourcePlugin({
        group,
        dir,
        devices: () => groupDevicesOf(opts.devices(), group, opts.pciFunctionOf),
        deviceInfoDir: opts.config.deviceInfoDir,
        preferSamePf: opts.config.preferSamePf.includes(group),
        now: opts.now,
        log,
        checkMs: opts.checkMs ?? CHECK_MS,
        onRegistration: (result) => registrations.inc({ resource: `ferry.dev/${group}`, result }),
      }),
  );
  registerGauges(opts.registry, () => plugins.map((p) => p.status()));
  const podResources = new PodResourcesClient(
    join(opts.config.kubeletDir, 'pod-resources', 'kubelet.sock'),
    opts.config.podResourcesTimeoutMs,
    opts.served,
  );
  return {
    allocationOf: async (pod) =>
      pod?.namespace && pod.name ? podResources.allocationOf(pod.namespace, pod.name) : undefined,
    refresh: () => {
      for (const p of plugins) p.refresh();
    },
    released: (released) => {
      const devices = opts.devices();
      for (const r of released) {
        const d = devices.find((x) => x.id === r.id) ?? devices.find((x) => x.mac === r.id);
        const plugin = plugins.find((p) => p.group === d?.group);
        if (d && plugin) plugin.released(d.id, r.heldSinceMs);
      }
    },
    status: () => plugins.map((p) => p.status()),
    start() {
      log.info({ dir, resources: plugins.map((p) => p.resource) }, 'serving delegated devices to the kubelet');
      for (const p of plugins) p.start();
    },
    async stop() {
      await Promise.all(plugins.map((p) => p.stop()));
      podResources.close();
    },
  };
}

function registerGauges(registry: Registry, statuses: () => ResourceStatus[]): void {
  const registers = [registry];
  new Gauge({
    name: 'ferry_device_plugin_registered',
    help: 'Whether the resource is registered with the kubelet now (1) or not (0: no kubelet socket, or registration failed)',
    labelNames: ['resource'],
    registers,
    collect() {
      this.reset();
      for (const s of statuses()) this.set({ resource: s.resource }, s.registered ? 1 : 0);
    },
  });
  new Gauge({
    name: 'ferry_device_plugin_devices',
    help: 'Devices of each resource as ferryd reports them to the kubelet, by health: Healthy (on the node, or in a pod Ferry put it in), Unhealthy (neither, or a VF whose PF has no carrier)',
    labelNames: ['resource', 'health'],
    registers,
    collect() {
      this.reset();
      for (const s of statuses()) {
        this.set({ resource: s.resource, health: 'Healthy' }, s.healthy);
        this.set({ resource: s.resource, health: 'Unhealthy' }, s.unhealthy);
      }
    },
  });
}
