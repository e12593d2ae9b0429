/**
 * One resource's device-info files (NPWG Device Information Specification 1.1.0 §4.1): Allocate writes
 * `<dir>/<resource, / as ->-<deviceID>-device.json` for each PCI device it hands out, which Multus reads
 * at the pod's ADD and copies into network-status; the file goes when the device is released (the pod's
 * DEL, GC, a queued DEL) and, as §4.1.1 asks, when ferryd stops.
 *
 * The kubelet frees a pod's devices when the pod is deleted, while the runtime's DEL of its sandbox comes
 * later: by then the kubelet may have allocated the device to the next pod, and Allocate has written its
 * file again. A release therefore removes a file only when no Allocate wrote it after the releasing
 * attachment took the device.
 */
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { deviceInfoFileName, type PciDeviceInfo } from '@ferry/shared-types/kube/device-info';

export class DeviceInfoFiles {
  readonly #dir: string;
  readonly #resource: string;
  readonly #now: () => number;
  /** When this ferryd last wrote each device's file. */
  readonly #writtenAtMs = new Map<string, number>();

  constructor(dir: string, resource: string, now: () => number) {
    this.#dir = dir;
    this.#resource = resource;
    this.#now = now;
  }

  pathOf(deviceId: string): string {
    return join(this.#dir, deviceInfoFileName(this.#resource, deviceId));
  }

  /** Writes the file whole or not at all (a rename): Multus may read it at any time. Throws the fs error. */
  write(deviceId: string, info: PciDeviceInfo): void {
    const path = this.pathOf(deviceId);
    const tmp = `${path}.tmp`;
    // §4.1.1: the device plugin creates the directory when it is not there.
    mkdirSync(this.#dir, { recursive: true });
    writeFileSync(tmp, `${JSON.stringify(info)}\n`, { mode: 0o644 });
    renameSync(tmp, path);
    this.#writtenAtMs.set(deviceId, this.#now());
  }

  /** The device's attachment (holding it since `heldSinceMs`) released it. */
  released(deviceId: string, heldSinceMs: number): void {
    if ((this.#writtenAtMs.get(deviceId) ?? Number.NEGATIVE_INFINITY) > heldSinceMs) return;
    this.#writtenAtMs.delete(deviceId);
    rmSync(this.pathOf(deviceId), { force: true });
  }

  /** Every file this ferryd wrote (§4.1.1: gone with the device plugin). */
  removeAll(): void {
    for (const id of this.#writtenAtMs.keys()) rmSync(this.pathOf(id), { force: true });
    this.#writtenAtMs.clear();
  }
}
