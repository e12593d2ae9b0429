import { spawnSync } from 'node:child_process';
import type { LockMode } from './lock-mode';

/**
 * One non-blocking flock(2) attempt for Node (chosen by lock.ts's #lock-impl): true when taken, false while
 * another holds it, an error for anything else. Node has no flock, and a native addon that wraps one
 * syscall costs every install a compiler: util-linux's flock(1) is run on the inherited descriptor
 * instead. A flock belongs to the open file description, not the process, so the lock outlives the child
 * and is held until `fd` is closed. One exec per attempt: fine for ferryd's start-up and the tests.
 */
export default function tryFlock(fd: number, mode: LockMode): boolean {
  const r = spawnSync('flock', ['--nonblock', `--${mode}`, '3'], { stdio: ['ignore', 'ignore', 'pipe', fd] });
  if (r.error) throw new Error(`flock: ${r.error.message}`, { cause: r.error });
  if (r.status === 0) return true;
  // flock(1) exits 1 when the lock is held elsewhere; anything else is a real failure.
  if (r.status === 1) return false;
  throw new Error(`flock exited ${r.status ?? r.signal}: ${r.stderr.toString().trim()}`);
}
