/**
 * ferryd's phase. `starting` until migrations, the queue drain and the first reconcile are done;
 * `ready` while serving; `draining` after SIGTERM, when ADD is refused (code 11) but DEL keeps working,
 * so pods being deleted during a rollout never wait for the new ferryd.
 */
export type Phase = 'starting' | 'ready' | 'draining';

export class Lifecycle {
  #phase: Phase = 'starting';

  get phase(): Phase {
    return this.#phase;
  }

  get isReady(): boolean {
    return this.#phase === 'ready';
  }

  markReady(): void {
    if (this.#phase === 'starting') this.#phase = 'ready';
  }

  markDraining(): void {
    this.#phase = 'draining';
  }
}
