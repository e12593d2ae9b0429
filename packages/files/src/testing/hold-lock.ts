/**
 * Takes a lock through whichever implementation the runtime resolves (`@ferry/files/lock`: libc under
 * Bun) and holds it until stdin closes. Usage under Bun: `bun hold-lock.ts PATH shared|exclusive` prints
 * `held` or `busy` (the lock is another's), or the error.
 */
import { type LockMode, tryLockFile } from '@ferry/files/lock';

const [path = '', mode] = process.argv.slice(2);
try {
  const lock = tryLockFile(path, mode as LockMode);
  process.stdout.write(lock ? 'held\n' : 'busy\n');
  if (lock) process.stdin.on('end', () => lock.release()).resume();
} catch (err) {
  process.stdout.write(`error: ${(err as Error).message}\n`);
}
