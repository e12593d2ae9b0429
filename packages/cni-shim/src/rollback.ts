import type { Logger } from './log';

/**
 * Undo steps for ADD, armed until commit(): host-device's one-undo-per-step without keying the undo on
 * an error variable (ptp's cmdAdd leaks its allocation on two return paths that way). Push each undo
 * before the step it undoes whenever that step can stop half-way (an iproute2 batch of several lines),
 * so every undo must be idempotent and find whatever the step left. unwind() never throws and never
 * hides the original error.
 */
export class Rollback {
  readonly #steps: { what: string; undo: () => Promise<unknown> }[] = [];

  push(what: string, undo: () => Promise<unknown>): void {
    this.#steps.push({ what, undo });
  }

  /** From here on, nothing is undone. */
  commit(): void {
    this.#steps.length = 0;
  }

  /** Undoes every armed step, last first, and empties the stack: steps pushed afterwards are armed anew. */
  async unwind(log: Logger): Promise<void> {
    for (const { what, undo } of this.#steps.splice(0).reverse()) {
      try {
        await undo();
        log.info({ step: what }, 'rolled back');
      } catch (err) {
        log.warn({ err, step: what }, 'rollback step failed; continuing');
      }
    }
  }
}
