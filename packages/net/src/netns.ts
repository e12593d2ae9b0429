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

/**
 * The argv that runs `ip ARGS` inside `ns`. `ip -n` accepts only names under /var/run/netns, so a path
 * goes through nsenter, which does not remount /sys the way `ip netns exec` does.
 */
export function ipArgv(ns: Netns, args: readonly string[]): string[] {
  return ns.kind === 'path' ? ['nsenter', `--net=${ns.path}`, 'ip', ...args] : ['ip', ...args];
}
