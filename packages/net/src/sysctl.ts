import { readFileSync, writeFileSync } from '@ferry/files/fs';
import { CniError, Code } from '@ferry/shared-types/errors';

/**
 * Sysctls of this process's own namespace, through /proc/sys (whose net/ part always shows the namespace
 * of the process that opens it). Pod sysctls are never needed: pod addresses use `nodad` instead.
 * Keys are path segments, e.g. ['net', 'ipv4', 'conf', 'fry0a1b', 'proxy_arp'], because interface
 * names may contain dots. Synchronous: /proc/sys never waits on a disk, and Bun's async file calls cost
 * ~1 ms each in the shim (a thread-pool round trip).
 */
/** The node's forwarding switch of each family: routed pods need it on. */
export const FORWARDING = {
  4: ['net', 'ipv4', 'ip_forward'],
  6: ['net', 'ipv6', 'conf', 'all', 'forwarding'],
} as const;

export function readSysctl(key: readonly string[]): string | undefined {
  try {
    return readFileSync(sysctlPath(key), 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** Writes `value` unless the sysctl already holds it. Throws NetlinkFailure when the write fails. */
export function ensureSysctl(key: readonly string[], value: string): void {
  if (readSysctl(key) === value) return;
  try {
    writeFileSync(sysctlPath(key), value);
  } catch (err) {
    throw new CniError(Code.NetlinkFailure, `set sysctl ${key.join('.')}=${value}: ${(err as Error).message}`, '', {
      cause: err,
    });
  }
}

function sysctlPath(key: readonly string[]): string {
  if (key[0] !== 'net' || key.some((s) => s === '' || s === '.' || s === '..' || s.includes('/'))) {
    throw new CniError(Code.Internal, `sysctl key ${JSON.stringify(key)} is not under net/`);
  }
  return `/proc/sys/${key.join('/')}`;
}
