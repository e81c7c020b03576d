#!/usr/bin/env bash
# The test command: installs dependencies, builds, runs the whole suite.
#
#   STOKER_SANITIZE=address  AddressSanitizer + UndefinedBehaviorSanitizer
#   STOKER_SANITIZE=thread   ThreadSanitizer
# build into build-asan / build-tsan (or $STOKER_BUILD_DIR) and run the same
# suite under them.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
sanitize=${STOKER_SANITIZE:-}
case "$sanitize" in
  "") build_dir=${STOKER_BUILD_DIR:-build} ;;
  address) build_dir=${STOKER_BUILD_DIR:-build-asan}
           export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
           export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} ;;
  thread) build_dir=${STOKER_BUILD_DIR:-build-tsan}
          export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp} ;;
  *) echo "STOKER_SANITIZE must be address or thread" >&2; exit 2 ;;
esac
STOKER_BUILD_DIR=$build_dir scripts/build.sh -DSTOKER_SANITIZE="$sanitize" \
  ${sanitize:+-DSTOKER_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo}
cd "$build_dir"
ctest --output-on-failure -j "$(nproc)"
