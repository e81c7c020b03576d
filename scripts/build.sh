#!/usr/bin/env bash
# Configures and builds stoker into ${STOKER_BUILD_DIR:-build}.
# Extra arguments go to CMake (e.g. -DSTOKER_WITH_CUDA=OFF).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${STOKER_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja "$@" >/dev/null
cmake --build "$build_dir"
