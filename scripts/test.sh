#!/usr/bin/env bash
# Every test: typecheck, lint, the unit suite and the end-to-end suite (real namespaces, the built
# binaries, a real ferryd), and beside them the set-up and demo once more from a fresh clone with an empty
# HOME (its own namespaces and paths; its install waits on the registry and compiles at the lowest
# priority, so it overlaps the suite rather than adding to it). Does all set-up first. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --no-build

fresh_log="$(mktemp /tmp/ferry-fresh-log-XXXXXX)"
trap 'rm -f "$fresh_log"' EXIT
./scripts/check-fresh-install.sh >"$fresh_log" 2>&1 &
fresh=$!

suite=0
pnpm test || suite=$?
fresh_status=0
wait "$fresh" || fresh_status=$?
cat "$fresh_log"
if ((suite != 0)); then exit "$suite"; fi
exit "$fresh_status"
