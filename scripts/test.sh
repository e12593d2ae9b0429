#!/usr/bin/env bash
# Every test: typecheck, lint, the unit suite and the end-to-end suite (real namespaces, the built
# binaries, a real ferryd), and beside them the set-up and demo once more from a fresh clone with an empty
# HOME (its own namespaces and paths). Does all set-up first. Needs root.
#
# The fresh clone's install starts as soon as the system packages are in (its own apt would wait on this
# one's lock), beside this checkout's install: both are mostly compiling SQLite, one core each, where one
# after the other left a core idle for a minute and then took the fresh one's minute from the suite. It
# runs at the lowest priority, so what is left of it takes what the suite leaves idle.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --system

fresh_log="$(mktemp /tmp/ferry-fresh-log-XXXXXX)"
trap 'rm -f "$fresh_log"' EXIT
./scripts/check-fresh-install.sh >"$fresh_log" 2>&1 &
fresh=$!

suite=0
./scripts/setup.sh --no-build || suite=$?
if ((suite == 0)); then pnpm test || suite=$?; fi
fresh_status=0
wait "$fresh" || fresh_status=$?
cat "$fresh_log"
if ((suite != 0)); then exit "$suite"; fi
exit "$fresh_status"
