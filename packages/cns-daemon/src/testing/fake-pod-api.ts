/**
 * An in-memory PodApi for unit tests of the cache and the status writer: pods with resourceVersions, a
 * merge patch that refuses a stale one with 409 (as the API server does), errors shaped as the client
 * library's (`code`, `body`), and failures on demand. The real API is the stand-in server in test/e2e.
 */
import type { PodView } from '../pods/pod';
import type { MetadataPatch, PodApi } from '../pods/pod-api';

/** An error as @kubernetes/client-node's ApiException carries it. */
export function apiError(code: number, message = `status ${code}`): Error {
  return Object.assign(new Error(`HTTP-Code: ${code}`), { code, body: { message } });
}

export class FakePodApi implements PodApi {
  readonly pods = new Map<string, PodView>();
  readonly calls: { verb: 'get' | 'patch'; pod: string; patch?: MetadataPatch }[] = [];
  /** Errors the next calls throw (connection refused, 500…), in order. */
  readonly failures: Error[] = [];
  /** Before the next patch of a pod: another writer's annotations (a new resourceVersion). */
  readonly races = new Map<string, Record<string, string>>();
  #rv = 100;

  put(pod: Omit<PodView, 'resourceVersion' | 'annotations'> & { annotations?: Record<string, string> }): PodView {
    const view: PodView = { annotations: {}, ...pod, resourceVersion: String(++this.#rv) };
    this.pods.set(`${pod.namespace}/${pod.name}`, view);
    return view;
  }

  async get(namespace: string, name: string): Promise<PodView | undefined> {
    const key = `${namespace}/${name}`;
    this.calls.push({ verb: 'get', pod: key });
    const failure = this.failures.shift();
    if (failure) throw failure;
    return this.pods.get(key);
  }

  async patchMetadata(namespace: string, name: string, patch: MetadataPatch): Promise<PodView> {
    const key = `${namespace}/${name}`;
    this.calls.push({ verb: 'patch', pod: key, patch });
    const failure = this.failures.shift();
    if (failure) throw failure;
    const race = this.races.get(key);
    const racing = this.pods.get(key);
    if (race && racing) {
      this.races.delete(key);
      this.put({ ...racing, annotations: { ...racing.annotations, ...race } });
    }
    const pod = this.pods.get(key);
    if (!pod) throw apiError(404, `pods "${name}" not found`);
    if (patch.resourceVersion !== pod.resourceVersion) throw apiError(409, 'the object has been modified');
    const annotations: Record<string, string> = { ...pod.annotations };
    for (const [k, v] of Object.entries(patch.annotations)) {
      if (v === null) delete annotations[k];
      else annotations[k] = v;
    }
    return this.put({ ...pod, annotations });
  }

  patches(): MetadataPatch[] {
    return this.calls.flatMap((c) => (c.patch ? [c.patch] : []));
  }
}
