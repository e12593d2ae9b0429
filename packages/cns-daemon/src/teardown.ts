/**
 * What startDaemon undoes, in two parts run first to last: what uses the store (listeners that share it
 * close and their in-flight requests finish, the reconciler stops (it starts drains), the drainer
 * finishes its pass, and only then the store closes), and the unix socket's app, which stays open during
 * a hand-over to hold requests for the successor. A failing step is logged and the rest still run.
 */
import type { Logger } from 'pino';

type Step = () => Promise<unknown> | unknown;

export class Teardown {
  readonly #log: Logger;
  readonly #storeUsers: Step[] = [];
  readonly #apps: Step[] = [];
  #released: Promise<void> | undefined;

  constructor(log: Logger) {
    this.#log = log;
  }

  /** Runs before the steps added earlier (so the store, added first, closes last). */
  beforeStore(step: Step): void {
    this.#storeUsers.unshift(step);
  }

  app(step: Step): void {
    this.#apps.unshift(step);
  }

  /** Everything that uses the store, once (a hand-over, then stop). */
  release(): Promise<void> {
    this.#released ??= this.#run(this.#storeUsers);
    return this.#released;
  }

  async all(): Promise<void> {
    await this.#run(this.#apps);
    await this.release();
  }

  async #run(steps: Step[]): Promise<void> {
    for (const step of steps) {
      await Promise.resolve()
        .then(step)
        .catch((err: unknown) => this.#log.warn({ err }, 'cleanup step failed'));
    }
  }
}
