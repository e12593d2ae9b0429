// What the DaemonSet's image holds, in one place: scripts/build-image.mjs builds it from these, and
// test/e2e/deploy.test.ts holds deploy/Dockerfile (the same image for builders with a registry) to them.

/** The Debian release of the root filesystem (the Dockerfile's debian:bookworm-slim). */
export const DEBIAN_SUITE = 'bookworm';
/**
 * Debian packages beyond the Essential set: ip (iproute2), nft (nftables, the egress masquerade), iptables
 * (its fallback), flock, nsenter and setpriv (util-linux, Essential, named so the Dockerfile states it), Node's
 * libstdc++6, and the reference CNI plugins (containernetworking-plugins), of which only CNI_PLUGINS stay.
 */
export const DEBIAN_PACKAGES = [
  'iproute2',
  'nftables',
  'iptables',
  'util-linux',
  'libstdc++6',
  'containernetworking-plugins',
];
/**
 * The plugins the image ships for nodes that lack them (`ferryctl install --plugins-dir`): portmap, which the
 * default conflist chains, and loopback, which the runtime runs in every pod.
 */
export const CNI_PLUGINS = ['portmap', 'loopback'];
/** Where Debian puts them, in the image too. */
export const CNI_PLUGINS_DIR = '/usr/lib/cni';
/** The Node major the image runs: the SQLite addon (better-sqlite3 12) `pnpm build` makes is built for it. */
export const NODE_MAJOR = 20;
/** Where the Node binary goes (from this machine's nodejs package; from node:20's /usr/local/bin in the Dockerfile). */
export const NODE_PATH = '/usr/bin/node';
/** Where dist/ goes. */
export const FERRY_PREFIX = '/opt/ferry';
export const ENTRYPOINT = [`${FERRY_PREFIX}/bin/ferryd`];
