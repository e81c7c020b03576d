#!/usr/bin/env bash
# Configures and builds stoker into ${STOKER_BUILD_DIR:-build}.
# Extra arguments go to CMake (e.g. -DSTOKER_WITH_CUDA=OFF).
#
# The compiler is clang unless CXX names another: clang checks the
# thread-safety annotations (ABSL_GUARDED_BY and friends) on every build,
# which GCC cannot.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${STOKER_BUILD_DIR:-build}
export CXX=${CXX:-clang++}
cmake -S . -B "$build_dir" -G Ninja "$@" >/dev/null
cmake --build "$build_dir"
