#!/usr/bin/env bash
# The test command: installs dependencies, builds, runs the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cd "${STOKER_BUILD_DIR:-build}"
ctest --output-on-failure -j "$(nproc)"
