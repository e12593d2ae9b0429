#!/usr/bin/env bash
# Set-up on a fresh Debian 12 machine that has Node 20 and npm: the system packages Ferry's tests and
# demo use, pnpm at the version package.json pins, the dependencies, and the build (dist/bin).
# Idempotent: on a machine that has everything it only re-installs and rebuilds. Needs root (apt).
# --no-build: stop after the install (scripts/test.sh builds as part of `pnpm test`).
# --system: stop after the system packages and pnpm (scripts/test.sh starts its fresh-clone check there).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(iproute2 iputils-ping iptables nftables procps util-linux containernetworking-plugins podman runc containerd busybox-static mmdebstrap openssl)
# Servers (and their clients) the tests run themselves, in their own namespaces: promtool and prometheus for
# the alert rules and the live scrape, docker-registry and skopeo for the image's push and pull. Without
# their Recommends, which would bring node-exporter, a service of its own.
servers=(prometheus docker-registry skopeo)
missing=()
missing_servers=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
for p in "${servers[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing_servers+=("$p"); done
if ((${#missing[@]} + ${#missing_servers[@]} > 0)); then
  echo "setup: installing ${missing[*]} ${missing_servers[*]}"
  apt-get update -qq
  if ((${#missing[@]} > 0)); then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  if ((${#missing_servers[@]} > 0)); then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing_servers[@]}" >/dev/null
  fi
fi

# corepack's signature check fails on these machines, so pnpm comes from npm, pinned.
pnpm_version="$(node -p "require('./package.json').packageManager.split('@')[1]")"
if [ "$(pnpm --version 2>/dev/null || true)" != "$pnpm_version" ]; then
  echo "setup: installing pnpm@$pnpm_version"
  npm install -g --silent "pnpm@$pnpm_version"
fi
[ "${1:-}" = --system ] && exit 0

# better-sqlite3 compiles its addon with node-gyp, which would download Node's headers (only the package
# registries are reachable here). pnpm 12 ignores `nodedir` in ~/.npmrc but node-gyp reads it from the
# environment: point it at the headers Debian's nodejs ships.
if [ -z "${npm_config_nodedir:-}" ] && [ -f /usr/include/node/node_version.h ]; then
  export npm_config_nodedir=/usr
fi
pnpm install --frozen-lockfile
[ "${1:-}" = --no-build ] || pnpm build
