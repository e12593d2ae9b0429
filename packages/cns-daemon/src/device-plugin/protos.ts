/**
 * The kubelet's gRPC APIs that ferryd speaks, loaded at run time from the protos beside this file
 * (protos/*.proto; the build copies them next to the bundle): the device plugin API (deviceplugin/v1beta1,
 * upstream's whole: ferryd serves DevicePlugin and calls Registration) and the pod-resources API
 * (podresources/v1, trimmed to what ferryd reads, field numbers as upstream: ferryd calls List). No
 * generated code: @grpc/proto-loader, as the tests' CRI client. The message types below are what proto-loader decodes with these options (camelCase fields, defaults
 * for unset ones), so a decoded message is of its type whatever the peer sent.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type Client,
  credentials,
  makeClientConstructor,
  type ServiceDefinition,
  type ServiceError,
} from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';

/** The API version the kubelet checks at Register (deviceplugin/v1beta1 constants.go). */
export const DEVICE_PLUGIN_VERSION = 'v1beta1';
export const HEALTHY = 'Healthy';
export const UNHEALTHY = 'Unhealthy';

export interface DevicePluginOptions {
  preStartRequired: boolean;
  getPreferredAllocationAvailable: boolean;
}
export interface RegisterRequest {
  version: string;
  endpoint: string;
  resourceName: string;
  options: DevicePluginOptions | null;
}
/** The NUMA nodes a device is attached to (int64 IDs: numbers as sent, decimal strings as decoded). */
export interface TopologyInfo {
  nodes: { ID: number | string }[];
}
export interface PluginDevice {
  ID: string;
  health: typeof HEALTHY | typeof UNHEALTHY;
  /** null: no topology (sysfs says -1, or the device is not a PCI function). */
  topology: TopologyInfo | null;
}
export interface ListAndWatchResponse {
  devices: PluginDevice[];
}
export interface ContainerPreferredAllocationRequest {
  availableDeviceIDs: string[];
  mustIncludeDeviceIDs: string[];
  allocationSize: number;
}
export interface PreferredAllocationRequest {
  containerRequests: ContainerPreferredAllocationRequest[];
}
export interface PreferredAllocationResponse {
  containerResponses: { deviceIDs: string[] }[];
}
export interface AllocateRequest {
  containerRequests: { devicesIds: string[] }[];
}
/** A host device node the kubelet makes in the container (with its cgroup permissions: r, w, m). */
export interface DeviceSpec {
  containerPath: string;
  hostPath: string;
  permissions: string;
}
export interface AllocateResponse {
  containerResponses: {
    envs: Record<string, string>;
    devices: DeviceSpec[];
    annotations: Record<string, string>;
  }[];
}
export interface PodResources {
  name: string;
  namespace: string;
  containers: { name: string; devices: { resourceName: string; deviceIds: string[] }[] }[];
}
export interface ListPodResourcesResponse {
  podResources: PodResources[];
}

const here = dirname(fileURLToPath(import.meta.url));
const OPTIONS = { longs: String, enums: String, defaults: true } as const;

const services = new Map<string, ServiceDefinition>();

/** Parsed once: each registration (and re-registration) serves and calls them again. */
function serviceOf(file: string, name: string): ServiceDefinition {
  const known = services.get(name);
  if (known) return known;
  const path = join(here, 'protos', file);
  const service = loadSync(path, OPTIONS)[name];
  // A message type has a `format`; a service is an object of methods, each with its path.
  if (!service || 'format' in service || !Object.values(service).every((m) => 'path' in m)) {
    throw new Error(`${path} has no service ${name}`);
  }
  services.set(name, service as ServiceDefinition);
  return service as ServiceDefinition;
}

export const protos = {
  devicePlugin: () => serviceOf('deviceplugin.proto', 'v1beta1.DevicePlugin'),
  registration: () => serviceOf('deviceplugin.proto', 'v1beta1.Registration'),
  podResources: () => serviceOf('podresources.proto', 'v1.PodResourcesLister'),
};

/** The protos' directory (the build copies it next to ferryd's bundle; the stand-in kubelet loads them). */
export const PROTOS_DIR = join(here, 'protos');

/** A client of `service` on the unix socket `socket`; close() it when done. */
export function clientOf(service: ServiceDefinition, socket: string): Client {
  return new (makeClientConstructor(service, 'client'))(`unix:${socket}`, credentials.createInsecure());
}

/** One unary call, bounded by `deadlineMs`; a failure is the ServiceError (code, details). */
export function unary<Res>(
  client: Client,
  service: ServiceDefinition,
  method: string,
  request: object,
  deadlineMs: number,
): Promise<Res> {
  const m = service[method];
  if (!m) return Promise.reject(new Error(`no method ${method}`));
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(
      m.path,
      m.requestSerialize,
      m.responseDeserialize,
      request,
      { deadline: Date.now() + deadlineMs },
      (err: ServiceError | null, res?: unknown) => {
        if (err) reject(err);
        // Decoded against the proto, which is the shape Res declares.
        else resolve(res as Res);
      },
    );
  });
}
