#!/usr/bin/env bash
# Builds stoker and runs the end-to-end benchmark. Arguments go to bench_e2e
# (e.g. --data=/path/to/imagefolder --workers=8 --touch).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh -DCMAKE_BUILD_TYPE=Release
exec "${STOKER_BUILD_DIR:-build}/bench/bench_e2e" "$@"
