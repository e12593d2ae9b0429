/**
 * One served group as a kubelet device plugin (deviceplugin/v1beta1), following the kubelet's
 * registration flow: serve DevicePlugin on a socket of our own in the kubelet's device-plugins directory,
 * then call Registration.Register on its kubelet.sock naming that socket; the kubelet then opens
 * ListAndWatch (kept open: every change of the list is sent on it) and calls GetPreferredAllocation and
 * Allocate when it admits a pod. A kubelet that restarts removes every socket in the directory and makes
 * kubelet.sock anew, and forgets its plugins: each check (every `checkMs`) that finds our socket gone, or
 * kubelet.sock another file than the one we registered on, serves again on a new socket and registers
 * again. Polling rather than inotify: the check is two stats, and it also catches a registration that
 * failed (the kubelet not up yet), which is tried again at the next check.
 */
import { rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pciDeviceInfoOf } from '@ferry/shared-types/kube/device-info';
import {
  Server,
  ServerCredentials,
  type ServerUnaryCall,
  type ServerWritableStream,
  type sendUnaryData,
  status,
} from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { DeviceInfoFiles } from './device-info-files';
import { envOf, type GroupDevice, pluginDevicesOf, preferredOf } from './devices';
import {
  type AllocateRequest,
  type AllocateResponse,
  clientOf,
  DEVICE_PLUGIN_VERSION,
  type DevicePluginOptions,
  type ListAndWatchResponse,
  type PreferredAllocationRequest,
  type PreferredAllocationResponse,
  protos,
  type RegisterRequest,
  unary,
} from './protos';
import { resourceOf } from './served';
import { vfioDeviceSpecsOf } from './vfio-devices';

/** How long Register may take (the kubelet answers at once, or not at all). */
const REGISTER_TIMEOUT_MS = 5000;

export interface ResourcePluginDeps {
  group: string;
  /** `<kubeletDir>/device-plugins`. */
  dir: string;
  /** The group's devices now, in ID order. */
  devices(): GroupDevice[];
  /** Where Allocate writes the device-info files (`devicePlugin.deviceInfoDir`). */
  deviceInfoDir: string;
  /** Preferred allocations keep a pod's VFs on one PF where they can (`devicePlugin.preferSamePf`). */
  preferSamePf: boolean;
  now: () => number;
  log: Logger;
  checkMs: number;
  /** Told each registration's outcome (the metric counts them). */
  onRegistration(result: 'registered' | 'failed'): void;
}

export interface ResourceStatus {
  resource: string;
  /** The socket the kubelet dials (in `dir`). */
  endpoint: string;
  registered: boolean;
  registrations: number;
  /** ListAndWatch streams open now (the kubelet keeps one). */
  watchers: number;
  healthy: number;
  unhealthy: number;
  lastError?: string;
}

type FileId = string | undefined;

export class ResourcePlugin {
  readonly group: string;
  readonly resource: string;
  readonly endpoint: string;
  readonly #deps: ResourcePluginDeps;
  readonly #socket: string;
  readonly #kubeletSocket: string;
  readonly #streams = new Set<ServerWritableStream<object, ListAndWatchResponse>>();
  readonly #deviceInfo: DeviceInfoFiles;
  #server: Server | undefined;
  /** What the registration was made against: our socket and kubelet.sock, as files. */
  #registeredOn: { own: FileId; kubelet: FileId } | undefined;
  #registrations = 0;
  #lastError: string | undefined;
  #sent = '';
  #timer: NodeJS.Timeout | undefined;
  #checking: Promise<void> | undefined;

  constructor(deps: ResourcePluginDeps) {
    this.#deps = deps;
    this.group = deps.group;
    this.resource = resourceOf(deps.group);
    this.endpoint = `ferry-${deps.group}.sock`;
    this.#socket = join(deps.dir, this.endpoint);
    this.#kubeletSocket = join(deps.dir, 'kubelet.sock');
    this.#deviceInfo = new DeviceInfoFiles(deps.deviceInfoDir, this.resource, deps.now);
  }

  start(): void {
    this.#timer = setInterval(() => void this.check(), this.#deps.checkMs);
    this.#timer.unref();
    void this.check();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#checking;
    this.#close();
    // Gone with ferryd: the kubelet sees the socket vanish and marks the resource's devices unhealthy.
    rmSync(this.#socket, { force: true });
    this.#registeredOn = undefined;
    this.#deviceInfo.removeAll();
  }

  /** The device's attachment (holding it since `heldSinceMs`) released it: its device-info file goes. */
  released(deviceId: string, heldSinceMs: number): void {
    try {
      this.#deviceInfo.released(deviceId, heldSinceMs);
    } catch (err) {
      this.#deps.log.warn({ err, resource: this.resource, deviceId }, 'could not remove a device-info file');
    }
  }

  /** Registers (again) when the kubelet (re)started or our socket went; one check at a time. */
  check(): Promise<void> {
    this.#checking ??= this.#check().finally(() => {
      this.#checking = undefined;
    });
    return this.#checking;
  }

  /** Sends the device list on every open ListAndWatch when it changed. */
  refresh(): void {
    const list = { devices: pluginDevicesOf(this.#deps.devices()) };
    const text = JSON.stringify(list);
    if (text === this.#sent) return;
    this.#sent = text;
    for (const s of this.#streams) s.write(list);
  }

  status(): ResourceStatus {
    const devices = this.#deps.devices();
    const healthy = devices.filter((d) => d.healthy).length;
    return {
      resource: this.resource,
      endpoint: this.#socket,
      registered: this.#registeredOn !== undefined,
      registrations: this.#registrations,
      watchers: this.#streams.size,
      healthy,
      unhealthy: devices.length - healthy,
      ...(this.#lastError ? { lastError: this.#lastError } : {}),
    };
  }

  async #check(): Promise<void> {
    const kubelet = fileIdOf(this.#kubeletSocket);
    const on = this.#registeredOn;
    if (on && on.kubelet === kubelet && on.own === fileIdOf(this.#socket)) return;
    if (on)
      this.#deps.log.info({ resource: this.resource }, 'kubelet restarted or our socket is gone: registering again');
    this.#registeredOn = undefined;
    // No kubelet (yet, or it is restarting): nothing to register with until its socket is there.
    if (kubelet === undefined) return;
    try {
      await this.#serve();
      const req: RegisterRequest = {
        version: DEVICE_PLUGIN_VERSION,
        endpoint: this.endpoint,
        resourceName: this.resource,
        options: OPTIONS,
      };
      const registration = protos.registration();
      const client = clientOf(registration, this.#kubeletSocket);
      try {
        await unary(client, registration, 'Register', req, REGISTER_TIMEOUT_MS);
      } finally {
        client.close();
      }
      this.#registeredOn = { own: fileIdOf(this.#socket), kubelet };
      this.#registrations++;
      this.#lastError = undefined;
      this.#deps.onRegistration('registered');
      this.#deps.log.info({ resource: this.resource, endpoint: this.#socket }, 'registered with the kubelet');
    } catch (err) {
      const reason = (err as { details?: string }).details ?? (err as Error).message;
      const error = `register ${this.resource} on ${this.#kubeletSocket}: ${reason}`;
      this.#deps.onRegistration('failed');
      // Tried again every check: one log line per new reason, not one a second.
      if (error !== this.#lastError)
        this.#deps.log.warn(
          { resource: this.resource, err },
          'registration with the kubelet failed; trying again each second',
        );
      this.#lastError = error;
    }
  }

  /** A new server on a new socket (the kubelet dials it after Register). */
  async #serve(): Promise<void> {
    this.#close();
    rmSync(this.#socket, { force: true });
    const server = new Server();
    server.addService(protos.devicePlugin(), {
      GetDevicePluginOptions: (
        _call: ServerUnaryCall<object, DevicePluginOptions>,
        done: sendUnaryData<DevicePluginOptions>,
      ) => done(null, OPTIONS),
      ListAndWatch: (call: ServerWritableStream<object, ListAndWatchResponse>) => this.#watch(call),
      GetPreferredAllocation: (
        call: ServerUnaryCall<PreferredAllocationRequest, PreferredAllocationResponse>,
        done: sendUnaryData<PreferredAllocationResponse>,
      ) => {
        const devices = this.#deps.devices();
        done(null, {
          containerResponses: call.request.containerRequests.map((r) => ({
            deviceIDs: preferredOf(devices, r, { preferSamePf: this.#deps.preferSamePf }),
          })),
        });
      },
      Allocate: (call: ServerUnaryCall<AllocateRequest, AllocateResponse>, done: sendUnaryData<AllocateResponse>) =>
        this.#allocate(call.request, done),
      PreStartContainer: (_call: ServerUnaryCall<object, object>, done: sendUnaryData<object>) => done(null, {}),
    });
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`unix:${this.#socket}`, ServerCredentials.createInsecure(), (err) =>
        err ? reject(err) : resolve(),
      ),
    );
    this.#server = server;
  }

  #watch(call: ServerWritableStream<object, ListAndWatchResponse>): void {
    this.#streams.add(call);
    const forget = () => this.#streams.delete(call);
    call.on('cancelled', forget);
    call.on('close', forget);
    call.on('error', forget);
    const list = { devices: pluginDevicesOf(this.#deps.devices()) };
    this.#sent = JSON.stringify(list);
    call.write(list);
  }

  /**
   * The kubelet asks after it chose the devices: each must be one of ours. What the pod gets is decided
   * at its ADD (from the kubelet's pod-resources API); the container learns its devices (envOf), gets the
   * /dev/vfio nodes of its userspace devices (vfio-devices.ts), and each PCI device's device-info file is
   * written for Multus. A file that cannot be written fails the
   * allocation (the kubelet fails the pod's admission and says why), rather than a pod whose
   * network-status lacks what it asked for.
   */
  #allocate(req: AllocateRequest, done: sendUnaryData<AllocateResponse>): void {
    const ours = new Map(this.#deps.devices().map((d) => [d.id, d]));
    const unknown = req.containerRequests.flatMap((c) => c.devicesIds).filter((id) => !ours.has(id));
    if (unknown.length > 0) {
      done({
        code: status.INVALID_ARGUMENT,
        details: `allocate ${this.resource}: no such device: ${unknown.join(', ')}`,
      });
      return;
    }
    const devicesOf = (ids: readonly string[]) => ids.flatMap((id) => ours.get(id) ?? []);
    for (const d of devicesOf(req.containerRequests.flatMap((c) => c.devicesIds))) {
      if (!d.pciAddress) continue;
      try {
        this.#deviceInfo.write(d.id, pciDeviceInfoOf(d.pciAddress, d.pfAddress));
      } catch (err) {
        done({
          code: status.INTERNAL,
          details: `allocate ${this.resource}: write device-info file ${this.#deviceInfo.pathOf(d.id)}: ${(err as Error).message}`,
        });
        return;
      }
    }
    done(null, {
      containerResponses: req.containerRequests.map((c) => ({
        envs: envOf(this.#deps.group, this.resource, devicesOf(c.devicesIds)),
        devices: vfioDeviceSpecsOf(devicesOf(c.devicesIds)),
        annotations: {},
      })),
    });
  }

  #close(): void {
    for (const s of this.#streams) s.end();
    this.#streams.clear();
    this.#server?.forceShutdown();
    this.#server = undefined;
  }
}

const OPTIONS: DevicePluginOptions = { preStartRequired: false, getPreferredAllocationAvailable: true };

/** A file's identity (device and inode), undefined when there is none: a socket made anew is another file. */
function fileIdOf(path: string): FileId {
  try {
    const st = statSync(path);
    return `${st.dev}:${st.ino}`;
  } catch {
    return undefined;
  }
}
