/**
 * Whether a netns path still names a live network namespace. A path that exists is not enough: a bind
 * mount point under a persistent directory stays behind as an empty file after a reboot (or an unmount).
 * Every namespace file, bind mount or /proc/<pid>/ns/net alike, lives on the one nsfs superblock, so its
 * device is the one of this process's own.
 */
import { statSync } from 'node:fs';

let nsfsDevice: number | undefined;

export function isLiveNetns(path: string): boolean {
  if (!path.startsWith('/')) return false;
  try {
    nsfsDevice ??= statSync('/proc/self/ns/net').dev;
    return statSync(path).dev === nsfsDevice;
  } catch {
    return false;
  }
}

/**
 * Whether an attachment's netns is known to be gone. '' is unknown, not gone: an adopted attachment whose
 * marker had no room for its netns path; the node still shows its links, so it stays until they go.
 */
export function isNetnsGone(path: string): boolean {
  return path !== '' && !isLiveNetns(path);
}
