/**
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection package does it (the
 * way kube-controller-manager elects): a candidate takes the Lease by create, or by an update carrying
 * the resourceVersion it read once the holder has let it expire; the leader renews it every retry period;
 * a 409 means someone else wrote first. Expiry is judged on this process's own monotonic clock, from when
 * it last saw the record change, never by comparing another node's renewTime with ours (clocks differ).
 *
 * Safety comes from two durations: a leader that has not renewed within renewDeadline stops leading (its
 * callbacks' signal aborts), while a candidate waits the full leaseDuration after the last change it saw
 * before taking over. renewDeadline < leaseDuration, so the old leader has stopped before anyone starts.
 * On stop() a leader gives the Lease up (an empty holder), so a successor need not wait.
 */
import { CoordinationV1Api, type KubeConfig, V1MicroTime } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import * as z from 'zod/mini';
import { KubeApiError, toKubeApiError } from './api-error';
import { callOptions } from './connection';

/** kube-controller-manager's defaults (--leader-elect-lease-duration, -renew-deadline, -retry-period). */
export const DEFAULT_LEASE_DURATION_SEC = 15;
export const DEFAULT_RENEW_DEADLINE_MS = 10_000;
export const DEFAULT_RETRY_PERIOD_MS = 2_000;
/** client-go's JitterFactor for candidates: up to 20 % more than the retry period. */
const JITTER = 1.2;

export interface LeaderElectorOptions {
  kc: KubeConfig;
  namespace: string;
  name: string;
  /** Who this candidate is (unique per process: the node name and a random suffix). */
  identity: string;
  leaseDurationSec?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  log: Logger;
  /** This candidate leads from now until `signal` aborts (renewal failed, lost, or stop()). */
  onStartedLeading(signal: AbortSignal): void;
  /** Called once each time leading ends (after `signal` aborted). */
  onStoppedLeading(): void;
  /** The holder seen in the Lease changed (null: nobody holds it). */
  onNewLeader?(identity: string | null): void;
}

export interface LeaderStatus {
  identity: string;
  isLeader: boolean;
  /** The holder as last seen in the Lease. */
  leader: string | null;
  leaseTransitions: number;
  /** The last failure talking to the API server (or the 409 that lost a race), since the last success. */
  lastError: string | null;
}

const LeaseSchema = z.object({
  metadata: z.object({ resourceVersion: z.string(), name: z.string() }),
  spec: z._default(
    z.object({
      holderIdentity: z.optional(z.nullable(z.string())),
      leaseDurationSeconds: z.optional(z.nullable(z.number())),
      acquireTime: z.optional(z.nullable(z.string())),
      renewTime: z.optional(z.nullable(z.string())),
      leaseTransitions: z.optional(z.nullable(z.number())),
    }),
    {},
  ),
});
type Lease = z.infer<typeof LeaseSchema>;

interface LeaderRecord {
  holderIdentity: string;
  leaseDurationSeconds: number;
  acquireTime: V1MicroTime;
  renewTime: V1MicroTime;
  leaseTransitions: number;
}

/** A MicroTime (the client's Date that serialises with six fractional digits, as the API server writes them). */
const microTime = (ms: number) => new V1MicroTime(ms);

type Attempt = 'leading' | 'held' | 'failed';

export class LeaderElector {
  readonly #opts: Required<Omit<LeaderElectorOptions, 'onNewLeader'>> & Pick<LeaderElectorOptions, 'onNewLeader'>;
  readonly #api: CoordinationV1Api;
  /** The Lease as last read or written, with the record it held when this process saw it change. */
  #lease: Lease | undefined;
  #observedRecord = '';
  #observedAtMs = 0;
  #leading: AbortController | undefined;
  #deadline: NodeJS.Timeout | undefined;
  #timer: NodeJS.Timeout | undefined;
  #wake: (() => void) | undefined;
  #loop: Promise<void> | undefined;
  #stopped = false;
  #leader: string | null = null;
  #lastError: string | null = null;

  constructor(opts: LeaderElectorOptions) {
    const leaseDurationSec = opts.leaseDurationSec ?? DEFAULT_LEASE_DURATION_SEC;
    const renewDeadlineMs = opts.renewDeadlineMs ?? DEFAULT_RENEW_DEADLINE_MS;
    const retryPeriodMs = opts.retryPeriodMs ?? DEFAULT_RETRY_PERIOD_MS;
    if (!(renewDeadlineMs < leaseDurationSec * 1000) || !(retryPeriodMs * JITTER < renewDeadlineMs)) {
      throw new RangeError(
        `leader election ${opts.namespace}/${opts.name}: needs retryPeriod × ${JITTER} < renewDeadline < leaseDuration`,
      );
    }
    this.#opts = { ...opts, leaseDurationSec, renewDeadlineMs, retryPeriodMs };
    this.#api = opts.kc.makeApiClient(CoordinationV1Api);
  }

  start(): void {
    if (this.#loop) throw new Error(`leader election ${this.#opts.name}: already started`);
    this.#loop = this.#run();
  }

  /** Ends the election; a leader gives the Lease up first, so a successor need not wait for it to expire. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#wake?.();
    await this.#loop;
    if (this.#leading) {
      await this.#release();
      this.#stopLeading('stopped');
    }
  }

  isLeader(): boolean {
    return this.#leading !== undefined;
  }

  status(): LeaderStatus {
    return {
      identity: this.#opts.identity,
      isLeader: this.isLeader(),
      leader: this.#leader,
      leaseTransitions: this.#lease?.spec.leaseTransitions ?? 0,
      lastError: this.#lastError,
    };
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      const attempt = await this.#tryAcquireOrRenew();
      if (this.#stopped) break;
      if (attempt === 'leading') this.#renewed();
      else if (attempt === 'held' && this.#leading) this.#stopLeading('another candidate holds the lease');
      // A failed renewal keeps leading until the deadline timer says otherwise (client-go's renew loop).
      const waitMs = this.#leading
        ? this.#opts.retryPeriodMs
        : this.#opts.retryPeriodMs * (1 + (JITTER - 1) * Math.random());
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
        this.#timer = setTimeout(resolve, waitMs);
      });
    }
  }

  #renewed(): void {
    if (!this.#leading) {
      this.#leading = new AbortController();
      this.#opts.log.info({ lease: this.#leaseName(), identity: this.#opts.identity }, 'became the leader');
      this.#opts.onStartedLeading(this.#leading.signal);
    }
    clearTimeout(this.#deadline);
    this.#deadline = setTimeout(
      () => this.#stopLeading('could not renew the lease before the renew deadline'),
      this.#opts.renewDeadlineMs,
    );
  }

  #stopLeading(why: string): void {
    const leading = this.#leading;
    if (!leading) return;
    clearTimeout(this.#deadline);
    this.#leading = undefined;
    this.#opts.log.warn({ lease: this.#leaseName(), identity: this.#opts.identity, why }, 'stopped leading');
    leading.abort(new Error(`leader election ${this.#leaseName()}: ${why}`));
    this.#opts.onStoppedLeading();
  }

  async #tryAcquireOrRenew(): Promise<Attempt> {
    const nowMs = Date.now();
    // The fast path: a leader renews the Lease it last wrote, without reading it first.
    if (this.#leading && this.#lease && this.#lease.spec.holderIdentity === this.#opts.identity) {
      const r = await this.#write('update', this.#recordFrom(this.#lease, nowMs));
      if (r !== 'conflict') return r;
    }
    let lease: Lease | undefined;
    try {
      lease = await this.#read();
    } catch (err) {
      return this.#failed(err);
    }
    if (!lease) {
      const created = await this.#write('create', this.#recordFrom(undefined, nowMs));
      return created === 'conflict' ? 'failed' : created;
    }
    this.#observe(lease);
    const holder = lease.spec.holderIdentity ?? '';
    const durationMs = (lease.spec.leaseDurationSeconds ?? this.#opts.leaseDurationSec) * 1000;
    if (holder !== '' && holder !== this.#opts.identity && performance.now() < this.#observedAtMs + durationMs) {
      return 'held';
    }
    const r = await this.#write('update', this.#recordFrom(lease, nowMs));
    return r === 'conflict' ? 'failed' : r;
  }

  /** The record to write: ours, keeping acquireTime and the transition count when we already held it. */
  #recordFrom(lease: Lease | undefined, nowMs: number): LeaderRecord {
    const spec = lease?.spec;
    const ours = spec?.holderIdentity === this.#opts.identity;
    const transitions = spec?.leaseTransitions ?? 0;
    return {
      holderIdentity: this.#opts.identity,
      leaseDurationSeconds: this.#opts.leaseDurationSec,
      acquireTime: microTime(ours && spec?.acquireTime ? Date.parse(spec.acquireTime) : nowMs),
      renewTime: microTime(nowMs),
      leaseTransitions: lease && !ours ? transitions + 1 : transitions,
    };
  }

  /** Creates the Lease or updates it at the resourceVersion last read: 'conflict' when another wrote first. */
  async #write(how: 'create' | 'update', record: LeaderRecord): Promise<Attempt | 'conflict'> {
    const { namespace, name } = this.#opts;
    const body = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name,
        namespace,
        ...(how === 'update' && this.#lease ? { resourceVersion: this.#lease.metadata.resourceVersion } : {}),
      },
      spec: record,
    };
    try {
      const options = callOptions({ timeoutMs: this.#callTimeoutMs() });
      const raw =
        how === 'create'
          ? await this.#api.createNamespacedLease({ namespace, body }, options)
          : await this.#api.replaceNamespacedLease({ namespace, name, body }, options);
      this.#accept(this.#parse(raw));
      this.#lastError = null;
      return 'leading';
    } catch (err) {
      const e = toKubeApiError(err, `${how} lease ${this.#leaseName()}`);
      if (e.kind === 'conflict' || e.kind === 'exists') {
        this.#lastError = e.message;
        return 'conflict';
      }
      return this.#failed(e);
    }
  }

  async #read(): Promise<Lease | undefined> {
    const { namespace, name } = this.#opts;
    try {
      const raw = await this.#api.readNamespacedLease(
        { namespace, name },
        callOptions({ timeoutMs: this.#callTimeoutMs() }),
      );
      return this.#parse(raw);
    } catch (err) {
      const e = toKubeApiError(err, `get lease ${this.#leaseName()}`);
      if (e.kind === 'gone') return undefined;
      throw e;
    }
  }

  /** Gives the Lease up: an empty holder and a 1 s duration (client-go's ReleaseOnCancel). */
  async #release(): Promise<void> {
    const lease = this.#lease;
    if (!lease || lease.spec.holderIdentity !== this.#opts.identity) return;
    const now = microTime(Date.now());
    const record = {
      holderIdentity: '',
      leaseDurationSeconds: 1,
      acquireTime: now,
      renewTime: now,
      leaseTransitions: lease.spec.leaseTransitions ?? 0,
    };
    const r = await this.#write('update', record);
    if (r !== 'leading')
      this.#opts.log.warn(
        { lease: this.#leaseName(), problem: this.#lastError },
        'could not give the lease up; it expires on its own',
      );
  }

  #accept(lease: Lease): void {
    this.#lease = lease;
    this.#observe(lease);
  }

  /** Notes when this process saw the record change (expiry is counted from here, on our own clock). */
  #observe(lease: Lease): void {
    this.#lease = lease;
    const record = JSON.stringify(lease.spec);
    if (record !== this.#observedRecord) {
      this.#observedRecord = record;
      this.#observedAtMs = performance.now();
    }
    const holder = lease.spec.holderIdentity || null;
    if (holder !== this.#leader) {
      this.#leader = holder;
      this.#opts.onNewLeader?.(holder);
    }
  }

  #parse(raw: unknown): Lease {
    const r = LeaseSchema.safeParse(raw);
    if (!r.success)
      throw new KubeApiError('invalid', `lease ${this.#leaseName()}: the API server's answer is not a Lease`);
    return r.data;
  }

  #failed(err: unknown): 'failed' {
    const e = toKubeApiError(err, `lease ${this.#leaseName()}`);
    this.#lastError = e.message;
    this.#opts.log.info(
      { lease: this.#leaseName(), problem: e.message },
      'leader election: the API server did not answer as hoped',
    );
    return 'failed';
  }

  /** A leader's call may not outlast its renew deadline; a candidate's, a retry period. */
  #callTimeoutMs(): number {
    return Math.max(
      100,
      this.#leading ? this.#opts.renewDeadlineMs - this.#opts.retryPeriodMs : this.#opts.retryPeriodMs,
    );
  }

  #leaseName(): string {
    return `${this.#opts.namespace}/${this.#opts.name}`;
  }
}
