import { readFile, writeFile } from 'node:fs/promises';
import { CniError, Code } from '@ferry/shared-types/errors';

/**
 * Sysctls of this process's own namespace, through /proc/sys (whose net/ part always shows the namespace
 * of the process that opens it). Pod sysctls are never needed: pod addresses use `nodad` instead.
 * Keys are path segments, e.g. ['net', 'ipv4', 'conf', 'fry0a1b', 'proxy_arp'], because interface
 * names may contain dots.
 */
/** The node's forwarding switch of each family: routed pods need it on. */
export const FORWARDING = {
  4: ['net', 'ipv4', 'ip_forward'],
  6: ['net', 'ipv6', 'conf', 'all', 'forwarding'],
} as const;

export async function readSysctl(key: readonly string[]): Promise<string | undefined> {
  try {
    return (await readFile(sysctlPath(key), 'utf8')).trim();
  } catch {
    return undefined;
  }
}

/** Writes `value` unless the sysctl already holds it. Throws NetlinkFailure when the write fails. */
export async function ensureSysctl(key: readonly string[], value: string): Promise<void> {
  if ((await readSysctl(key)) === value) return;
  try {
    await writeFile(sysctlPath(key), value);
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
