#!/usr/bin/env bash
# Every test: typecheck, lint, the unit suite and the end-to-end suite (real namespaces, the built
# binaries, a real ferryd), then the set-up and demo once more from a fresh clone with an empty HOME.
# Does all set-up first. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --no-build
pnpm test
./scripts/check-fresh-install.sh
