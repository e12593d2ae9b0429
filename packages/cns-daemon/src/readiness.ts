/**
 * Readiness: serving (start-up reconciliation done, not draining) and storage writable. Lifecycle alone
 * decides whether ADD is refused up front; storage does not (see storage/health.ts), it only says why
 * ferryd is not ready.
 */
import type { Readiness } from '@ferry/shared-types/api/status';
import type { Lifecycle } from './lifecycle';
import type { StorageHealth } from './storage/health';

export function readinessOf(lifecycle: Lifecycle, storage: StorageHealth): Readiness {
  const phase = lifecycle.phase;
  if (!lifecycle.isReady) return { ready: false, phase, reason: `ferryd is ${phase}` };
  const failing = storage.failing;
  if (failing) {
    const since = new Date(failing.sinceMs).toISOString();
    return { ready: false, phase, reason: `storage failing since ${since}: ${failing.message}` };
  }
  return { ready: true, phase };
}
