/**
 * One cluster-scoped custom resource through @kubernetes/client-node's CustomObjectsApi, typed by its
 * zod schema: every answer is parsed (an object that does not parse is a KubeApiError 'invalid' naming
 * the field, or, in a list, an entry of `invalid`), every failure is a KubeApiError, every call has a
 * deadline. Writes that race with other writers carry a precondition: a create is create-if-absent, a
 * status write and a finalizer removal carry the resourceVersion they were computed from, a delete the
 * uid of the object meant.
 */
import { describePath } from '@ferry/shared-types/parse';
import { CustomObjectsApi, type KubeConfig, PatchStrategy } from '@kubernetes/client-node';
import * as z from 'zod/mini';
import { KubeApiError, toKubeApiError } from './api-error';
import { callOptions } from './connection';

/** Which resource: its group, version, plural and kind (the kind every object must carry). */
export interface CustomResourceRef {
  group: string;
  version: string;
  plural: string;
  kind: string;
}

/** The metadata every custom object has, as the schemas of shared-types/kube parse it. */
export interface CustomObjectMeta {
  name: string;
  uid: string;
  resourceVersion: string;
  finalizers?: string[] | undefined;
  deletionTimestamp?: string | undefined;
}

/** An object in the API server that its schema refuses (a hand edit): its name and what is wrong. */
export interface InvalidObject {
  name: string;
  problem: string;
}

export interface Listed<T> {
  items: T[];
  invalid: InvalidObject[];
  /** The list's resourceVersion. */
  resourceVersion: string;
}

/**
 * What became of a release (delete, then our finalizer removed): 'released' once the object no longer
 * waits for us (gone, or held only by others' finalizers); 'gone' when it was not there (or vanished
 * under us); 'conflict' when the object under that name is not the one meant (another uid) or kept
 * changing under us.
 */
export type ReleaseOutcome = 'released' | 'gone' | 'conflict';

/** An unparsed object as a list carries it: only what names it. */
const RawObjectSchema = z.looseObject({ metadata: z.looseObject({ name: z.optional(z.string()) }) });
const RawListSchema = z.looseObject({
  metadata: z.optional(z.looseObject({ resourceVersion: z.optional(z.string()) })),
  items: z.array(z.unknown()),
});
const DeleteStatusSchema = z.looseObject({ kind: z.literal('Status') });

/** A finalizer removal that conflicts is retried this often (re-reading each time) before giving up. */
const RELEASE_ATTEMPTS = 4;

/** A zod failure in one line: `spec.cidr: Invalid CIDR`. */
export function problemOf(error: z.core.$ZodError): string {
  const issue = error.issues[0];
  return issue ? `${describePath(issue.path)}: ${issue.message}` : 'invalid';
}

export class ClusterCustomObjects<T extends { metadata: CustomObjectMeta }> {
  readonly #api: CustomObjectsApi;
  readonly #ref: CustomResourceRef;
  readonly #schema: z.ZodMiniType<T>;
  readonly #timeoutMs: number;

  constructor(kc: KubeConfig, ref: CustomResourceRef, schema: z.ZodMiniType<T>, timeoutMs: number) {
    this.#api = kc.makeApiClient(CustomObjectsApi);
    this.#ref = ref;
    this.#schema = schema;
    this.#timeoutMs = timeoutMs;
  }

  get ref(): CustomResourceRef {
    return this.#ref;
  }

  /** The object parsed; KubeApiError 'invalid' naming the field when the answer is not one. */
  parse(raw: unknown, what: string): T {
    const r = this.#schema.safeParse(raw);
    if (r.success) return r.data;
    throw new KubeApiError(
      'invalid',
      `${what}: the API server's answer is not a valid ${this.#ref.kind}: ${problemOf(r.error)}`,
    );
  }

  /** POST: the created object; KubeApiError 'exists' when the name is taken. */
  async create(body: { metadata: { name: string } }): Promise<T> {
    const what = this.#what('create', body.metadata.name);
    const raw = await this.#call(what, (options) =>
      this.#api.createClusterCustomObject({ ...this.#path(), body: this.#withKind(body) }, options),
    );
    return this.parse(raw, what);
  }

  /** GET: the object, or undefined (404). */
  async get(name: string): Promise<T | undefined> {
    const what = this.#what('get', name);
    try {
      return this.parse(
        await this.#call(what, (options) => this.#api.getClusterCustomObject({ ...this.#path(), name }, options)),
        what,
      );
    } catch (err) {
      if (KubeApiError.is(err) && err.kind === 'gone') return undefined;
      throw err;
    }
  }

  /** LIST (with a label selector): the objects that parse, and those that do not. */
  async list(labelSelector?: string): Promise<Listed<T>> {
    const what = this.#what('list', labelSelector ? `-l ${labelSelector}` : '');
    const raw = await this.#call(what, (options) =>
      this.#api.listClusterCustomObject({ ...this.#path(), ...(labelSelector ? { labelSelector } : {}) }, options),
    );
    const list = RawListSchema.safeParse(raw);
    if (!list.success)
      throw new KubeApiError('invalid', `${what}: the API server's answer is not a list: ${problemOf(list.error)}`);
    const out: Listed<T> = { items: [], invalid: [], resourceVersion: list.data.metadata?.resourceVersion ?? '' };
    for (const item of list.data.items) {
      const r = this.#schema.safeParse(item);
      if (r.success) out.items.push(r.data);
      else out.invalid.push({ name: nameOfRaw(item), problem: problemOf(r.error) });
    }
    return out;
  }

  /**
   * A list's raw answer, for an informer (kube/object-cache.ts parses each item itself): the items that
   * have metadata, and the list's resourceVersion. Errors are the client's own (the informer describes them).
   */
  async listRaw(options: Parameters<CustomObjectsApi['listClusterCustomObject']>[1]) {
    const raw: unknown = await this.#api.listClusterCustomObject(this.#path(), options);
    const list = RawListSchema.safeParse(raw);
    if (!list.success)
      throw new KubeApiError('invalid', `list ${this.#ref.plural}: not a list: ${problemOf(list.error)}`);
    const items = list.data.items.flatMap((item) => {
      const r = RawObjectSchema.safeParse(item);
      return r.success ? [r.data] : [];
    });
    return { metadata: list.data.metadata ?? {}, items };
  }

  /**
   * PUT /status: replaces the status of the object at `resourceVersion` (KubeApiError 'conflict' when
   * it is no longer the current one). Only status is sent: the status subresource ignores the rest.
   */
  async replaceStatus(name: string, resourceVersion: string, status: object): Promise<T> {
    const what = this.#what('update', `${name}/status`);
    const body = this.#withKind({ metadata: { name, resourceVersion }, status });
    const raw = await this.#call(what, (options) =>
      this.#api.replaceClusterCustomObjectStatus({ ...this.#path(), name, body }, options),
    );
    return this.parse(raw, what);
  }

  /**
   * A JSON merge patch (RFC 7386) at `resourceVersion` (KubeApiError 'conflict' when stale): only the
   * fields the patch names change, so nothing another writer set that our schema does not read is lost.
   */
  async mergePatch(name: string, resourceVersion: string, patch: { metadata?: object; spec?: object }): Promise<T> {
    const what = this.#what('patch', name);
    const body = { ...patch, metadata: { ...patch.metadata, resourceVersion } };
    const raw = await this.#call(
      what,
      (options) => this.#api.patchClusterCustomObject({ ...this.#path(), name, body }, options),
      PatchStrategy.MergePatch,
    );
    return this.parse(raw, what);
  }

  /**
   * DELETE with preconditions: the object as it now is (marked for deletion, held by finalizers), or
   * undefined when it is gone. KubeApiError 'gone' (404), 'conflict' (a precondition failed).
   */
  async delete(name: string, preconditions: { uid: string; resourceVersion?: string }): Promise<T | undefined> {
    const what = this.#what('delete', name);
    const raw = await this.#call(what, (options) =>
      this.#api.deleteClusterCustomObject(
        { ...this.#path(), name, body: { preconditions, propagationPolicy: 'Background' } },
        options,
      ),
    );
    return DeleteStatusSchema.safeParse(raw).success ? undefined : this.parse(raw, what);
  }

  /**
   * Releases the object `meant` (by uid): deletes it, then takes `finalizer` off (a merge patch at the
   * resourceVersion it was read at, so no other writer's change is lost; re-read on conflict).
   */
  async release(meant: { metadata: CustomObjectMeta }, finalizer: string): Promise<ReleaseOutcome> {
    const { name, uid } = meant.metadata;
    let current: T | undefined;
    try {
      current = await this.delete(name, { uid });
    } catch (err) {
      if (KubeApiError.is(err) && err.kind === 'gone') return 'gone';
      if (KubeApiError.is(err) && err.kind === 'conflict') return 'conflict';
      throw err;
    }
    for (let attempt = 1; current; attempt++) {
      const finalizers = current.metadata.finalizers ?? [];
      if (!finalizers.includes(finalizer)) return 'released';
      if (attempt > RELEASE_ATTEMPTS) return 'conflict';
      try {
        const rest = finalizers.filter((f) => f !== finalizer);
        await this.mergePatch(name, current.metadata.resourceVersion, { metadata: { finalizers: rest } });
        return 'released';
      } catch (err) {
        if (!KubeApiError.is(err) || (err.kind !== 'conflict' && err.kind !== 'gone')) throw err;
      }
      current = await this.get(name);
      if (current && current.metadata.uid !== uid) return 'conflict';
    }
    return 'gone';
  }

  #path() {
    const { group, version, plural } = this.#ref;
    return { group, version, plural };
  }

  #withKind<B extends object>(body: B): B & { apiVersion: string; kind: string } {
    return { ...body, apiVersion: `${this.#ref.group}/${this.#ref.version}`, kind: this.#ref.kind };
  }

  #what(verb: string, name: string): string {
    return `${verb} ${this.#ref.plural}.${this.#ref.group}${name ? ` ${name}` : ''}`;
  }

  async #call(
    what: string,
    fn: (options: ReturnType<typeof callOptions>) => Promise<unknown>,
    contentType?: string,
  ): Promise<unknown> {
    try {
      return await fn(callOptions({ timeoutMs: this.#timeoutMs, ...(contentType ? { contentType } : {}) }));
    } catch (err) {
      throw toKubeApiError(err, what);
    }
  }
}

function nameOfRaw(item: unknown): string {
  const r = RawObjectSchema.safeParse(item);
  return (r.success ? r.data.metadata.name : undefined) ?? '(no name)';
}
