/// <reference types="bun-types" />
import { ERRNO, errno, errnoError, libc } from '@ferry/sys/libc';
import type { LockMode } from './lock-mode';

const LOCK_SH = 1;
const LOCK_EX = 2;
const LOCK_NB = 4;

/**
 * One non-blocking flock(2) attempt through the Bun binary's libc binding (chosen by lock.ts's
 * #lock-impl): true when taken, false while another holds it, an error for anything else.
 */
export default function tryFlock(fd: number, mode: LockMode): boolean {
  if (libc().flock(fd, (mode === 'shared' ? LOCK_SH : LOCK_EX) | LOCK_NB) === 0) return true;
  const e = errno();
  // EWOULDBLOCK is EAGAIN on Linux.
  if (e === ERRNO.EAGAIN || e === ERRNO.EINTR) return false;
  throw errnoError('flock', undefined, e);
}
