/**
 * Network namespaces as arguments. Node cannot move one thread into a namespace (pkg/ns's README
 * explains why ambient namespace state is unsafe even in Go), so every function that touches links
 * takes a Netns and enters it in the child process it spawns.
 */

/** `self` is wherever this process runs (the node's namespace in production); `path` is a netns file. */
export type Netns = { kind: 'self' } | { kind: 'path'; path: string };

export const SELF: Netns = { kind: 'self' };

/** The netns at `path` (CNI_NETNS, /var/run/netns/NAME or /proc/PID/ns/net). */
export function netnsAt(path: string): Netns {
  return { kind: 'path', path };
}

/** How a netns is named in error messages and logs. */
export function describeNetns(ns: Netns): string {
  return ns.kind === 'self' ? 'the node namespace' : ns.path;
}

/** `/var/run/netns/NAME` (or `/run/netns/NAME`, the same directory) → NAME; anything else → undefined. */
export function namedNetns(path: string): string | undefined {
  const m = /^\/(?:var\/)?run\/netns\/([^/]+)$/.exec(path);
  const name = m?.[1];
  return name && !name.startsWith('-') && name !== '.' && name !== '..' ? name : undefined;
}

/**
 * The argv that runs `ip ARGS` inside `ns`. A namespace under /var/run/netns (containerd's and CRI-O's)
 * is entered by `ip -n NAME` itself, one exec fewer; any other path (/proc/PID/ns/net) goes through
 * nsenter, which does not remount /sys the way `ip netns exec` does.
 */
export function ipArgv(ns: Netns, args: readonly string[], tool: 'ip' | 'bridge' = 'ip'): string[] {
  if (ns.kind === 'self') return [tool, ...args];
  const name = namedNetns(ns.path);
  return name ? [tool, '-n', name, ...args] : ['nsenter', `--net=${ns.path}`, tool, ...args];
}
