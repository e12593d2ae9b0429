/**
 * One piece of work that callers ask for at any time and that must never run twice at once: a call while
 * it runs asks for one more run after it (however many calls came), so every caller's promise resolves
 * once a run that started after its call has finished. The cluster controller's syncs and the block
 * manager's passes are each one.
 */
export class CoalescedRun {
  readonly #once: () => Promise<void>;
  readonly #isStopped: () => boolean;
  #running: Promise<void> | undefined;
  #again = false;

  /** `once` is one run; `isStopped` ends the loop before the next one. */
  constructor(once: () => Promise<void>, isStopped: () => boolean) {
    this.#once = once;
    this.#isStopped = isStopped;
  }

  /** Starts a run, or asks the one in progress to go again; resolves when no run is due. */
  run(): Promise<void> {
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    this.#running = (async () => {
      try {
        do {
          this.#again = false;
          if (this.#isStopped()) break;
          await this.#once();
        } while (this.#again);
      } finally {
        this.#running = undefined;
      }
    })();
    return this.#running;
  }

  /** Resolves when no run is in progress or asked for. */
  async idle(): Promise<void> {
    while (this.#running) await this.#running;
  }
}
