#!/usr/bin/env bash
# Configures and builds stoker into ${STOKER_BUILD_DIR:-build}.
# Extra arguments go to CMake (e.g. -DSTOKER_WITH_CUDA=OFF).
# STOKER_TARGETS="stokerd make_dataset" builds only those targets (and what
# they need) instead of everything, tests included.
#
# The compiler is clang unless CXX names another: clang checks the
# thread-safety annotations (ABSL_GUARDED_BY and friends) on every build,
# which GCC cannot.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${STOKER_BUILD_DIR:-build}
export CXX=${CXX:-clang++}
cmake -S . -B "$build_dir" -G Ninja "$@" >/dev/null
cmake --build "$build_dir" ${STOKER_TARGETS:+--target $STOKER_TARGETS}
