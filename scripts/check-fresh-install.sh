#!/usr/bin/env bash
# The README's commands on a new machine: a clone of the committed tree, an empty HOME (no pnpm store,
# no node-gyp cache, no ~/.npmrc), no npm_config_* from the caller; set-up and the demo must pass.
# Guards against a dependency that downloads at install time (only the package registries are reachable)
# or a step that works only thanks to a cache. Part of scripts/test.sh. Needs root, like the demo.
set -euo pipefail
cd "$(dirname "$0")/.."

work="$(mktemp -d /tmp/ferry-fresh-XXXXXX)"
trap 'rm -rf "$work"' EXIT
git clone -q --no-local . "$work/repo"
mkdir -m 0700 "$work/home"

echo "fresh install: set-up and demo in a clone with an empty HOME ($work)"
fresh() { env -i PATH="$PATH" HOME="$work/home" LANG=C.UTF-8 bash -c 'cd "$1" && shift && "$@"' _ "$work/repo" "$@"; }
# The install first, at the lowest priority: most of it is compiling SQLite (a minute of CPU), which then
# takes what the work beside it (scripts/test.sh: the checkout's own install, then the suite) leaves idle
# instead of slowing it. The demo, at normal priority (its ferryd has 10 s to be ready), runs the set-up
# again, which finds the install done and builds.
if ! { fresh nice -n 19 ./scripts/setup.sh --no-build && fresh ./scripts/demo.sh; } >"$work/out.log" 2>&1; then
  echo "fresh install FAILED; the last lines:" >&2
  tail -n 40 "$work/out.log" >&2
  exit 1
fi
# The install really started from nothing: pnpm's store is the one under the new HOME, and it is filled.
store="$(env -i PATH="$PATH" HOME="$work/home" bash -c 'cd "$1" && pnpm store path' _ "$work/repo")"
case "$store" in
  "$work/home"/*) [ -n "$(ls -A "$store" 2>/dev/null)" ] || { echo "fresh install: $store is empty" >&2; exit 1; } ;;
  *) echo "fresh install: pnpm used the store $store, not one under the empty HOME" >&2; exit 1 ;;
esac
echo "fresh install: set-up and demo passed ($(grep -c '== ' "$work/out.log") demo steps)"
